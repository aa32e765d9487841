package volumes

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// maxTokenAge bounds how long a token is served from the cache, as the
// kubelet's token manager does.
const maxTokenAge = 24 * time.Hour

// tokenCache keeps service account tokens per request and pod, and asks
// for a new one once 80% of a token's lifetime (or 24 hours) has passed.
type tokenCache struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	entries map[string]cachedToken
}

type cachedToken struct {
	tr      *authenticationv1.TokenRequest
	fetched time.Time
	pod     types.UID
}

func newTokenCache(clk clock.PassiveClock) *tokenCache {
	return &tokenCache{clock: clk, entries: map[string]cachedToken{}}
}

func tokenKey(namespace, name string, req *authenticationv1.TokenRequest) string {
	exp := int64(0)
	if req.Spec.ExpirationSeconds != nil {
		exp = *req.Spec.ExpirationSeconds
	}
	ref := req.Spec.BoundObjectRef
	return fmt.Sprintf("%s/%s|%s|%d|%s/%s/%s", namespace, name, strings.Join(req.Spec.Audiences, ","), exp, ref.Kind, ref.Name, ref.UID)
}

func (c *tokenCache) get(ctx context.Context, getter TokenGetter, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := tokenKey(namespace, name, req)
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && !needsRefresh(e, now) {
		return e.tr, nil
	}
	tr, err := getter.GetServiceAccountToken(ctx, namespace, name, req)
	if err != nil {
		if ok && now.Before(e.tr.Status.ExpirationTimestamp.Time) {
			return e.tr, nil // keep serving the still valid token
		}
		return nil, err
	}
	if tr == nil || tr.Status.Token == "" {
		return nil, fmt.Errorf("the token request returned no token: %w", errdefs.ErrUnavailable)
	}
	c.mu.Lock()
	c.entries[key] = cachedToken{tr: tr, fetched: now, pod: req.Spec.BoundObjectRef.UID}
	c.mu.Unlock()
	return tr, nil
}

func needsRefresh(e cachedToken, now time.Time) bool {
	exp := e.tr.Status.ExpirationTimestamp.Time
	if exp.IsZero() || !now.Before(exp) || now.Sub(e.fetched) > maxTokenAge {
		return true
	}
	return now.After(e.fetched.Add(exp.Sub(e.fetched) * 8 / 10))
}

// forget drops the pod's tokens.
func (c *tokenCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.pod == uid {
			delete(c.entries, k)
		}
	}
}
