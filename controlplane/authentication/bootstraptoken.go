package authentication

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"berth/internal/errdefs"
)

// Bootstrap token facts, as upstream (k8s.io/cluster-bootstrap).
const (
	// BootstrapTokenSecretType is the type of bootstrap token secrets.
	BootstrapTokenSecretType corev1.SecretType = "bootstrap.kubernetes.io/token"
	// BootstrapTokenSecretPrefix starts a bootstrap token secret's name;
	// the token ID follows.
	BootstrapTokenSecretPrefix = "bootstrap-token-"
	// BootstrapTokenNamespace holds the bootstrap token secrets.
	BootstrapTokenNamespace = metav1.NamespaceSystem
	// BootstrapUserPrefix starts the user name of a bootstrap token; the
	// token ID follows.
	BootstrapUserPrefix = "system:bootstrap:"
	// BootstrappersGroup is the group of every bootstrap token.
	BootstrappersGroup = "system:bootstrappers"

	// Data keys of a bootstrap token secret.
	BootstrapTokenIDKey          = "token-id"
	BootstrapTokenSecretKey      = "token-secret"
	BootstrapTokenDescriptionKey = "description"
	BootstrapTokenExpirationKey  = "expiration"
	BootstrapTokenUsageAuthKey   = "usage-bootstrap-authentication"
	BootstrapTokenUsageSignKey   = "usage-bootstrap-signing"
	BootstrapTokenExtraGroupsKey = "auth-extra-groups"
)

var (
	bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	extraGroupRE     = regexp.MustCompile(`^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`)
)

// SecretGetter reads one secret; a missing one is a NotFound API error.
type SecretGetter func(ctx context.Context, namespace, name string) (*corev1.Secret, error)

// ParseBootstrapToken splits "<id>.<secret>" (6 and 16 characters of
// [a-z0-9]).
func ParseBootstrapToken(token string) (id, secret string, err error) {
	m := bootstrapTokenRE.FindStringSubmatch(token)
	if m == nil {
		return "", "", fmt.Errorf("bootstrap token: want <6 chars>.<16 chars> of [a-z0-9]: %w", errdefs.ErrInvalidArgument)
	}
	return m[1], m[2], nil
}

// GenerateBootstrapToken returns a random "<id>.<secret>".
func GenerateBootstrapToken() (string, error) {
	id, err := randomChars(6)
	if err != nil {
		return "", err
	}
	secret, err := randomChars(16)
	if err != nil {
		return "", err
	}
	return id + "." + secret, nil
}

func randomChars(n int) (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b strings.Builder
	for range n {
		i, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", fmt.Errorf("bootstrap token: %w", err)
		}
		b.WriteByte(alphabet[i.Int64()])
	}
	return b.String(), nil
}

// BootstrapTokenSecret is the kube-system secret that makes token usable
// for authentication, with a description, an expiry (zero: never) and
// extra groups (each system:bootstrappers:...).
func BootstrapTokenSecret(token, description string, expires time.Time, extraGroups ...string) (*corev1.Secret, error) {
	id, secret, err := ParseBootstrapToken(token)
	if err != nil {
		return nil, err
	}
	for _, g := range extraGroups {
		if !extraGroupRE.MatchString(g) {
			return nil, fmt.Errorf("bootstrap token: extra group %q: want system:bootstrappers:...: %w", g, errdefs.ErrInvalidArgument)
		}
	}
	data := map[string][]byte{
		BootstrapTokenIDKey:        []byte(id),
		BootstrapTokenSecretKey:    []byte(secret),
		BootstrapTokenUsageAuthKey: []byte("true"),
	}
	if description != "" {
		data[BootstrapTokenDescriptionKey] = []byte(description)
	}
	if !expires.IsZero() {
		data[BootstrapTokenExpirationKey] = []byte(expires.UTC().Format(time.RFC3339))
	}
	if len(extraGroups) > 0 {
		data[BootstrapTokenExtraGroupsKey] = []byte(strings.Join(extraGroups, ","))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: BootstrapTokenSecretPrefix + id, Namespace: BootstrapTokenNamespace},
		Type:       BootstrapTokenSecretType,
		Data:       data,
	}, nil
}

// BootstrapTokenAuthenticator authenticates bootstrap tokens against their
// kube-system secrets: user system:bootstrap:<id>, groups
// system:bootstrappers and the secret's auth-extra-groups. A token whose
// secret is missing, of another type, not for authentication, expired,
// being deleted or holding another secret gets no opinion.
type BootstrapTokenAuthenticator struct {
	// Secrets reads the token secrets.
	Secrets SecretGetter
	// Now is the clock for expiry; nil: time.Now.
	Now func() time.Time
}

var _ authenticator.Token = (*BootstrapTokenAuthenticator)(nil)

// BootstrapTokenExpiry reports whether the bootstrap token Secret s has
// expired at now, and otherwise how long it has left (0 when it never
// expires). An expiration that does not parse as RFC 3339 counts as
// expired, as upstream's.
func BootstrapTokenExpiry(s *corev1.Secret, now time.Time) (expired bool, left time.Duration) {
	raw := string(s.Data[BootstrapTokenExpirationKey])
	if raw == "" {
		return false, 0
	}
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil || !now.Before(at) {
		return true, 0
	}
	return false, at.Sub(now)
}

// AuthenticateToken implements authenticator.Token.
func (a *BootstrapTokenAuthenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	id, secret, err := ParseBootstrapToken(token)
	if err != nil {
		return nil, false, nil
	}
	s, err := a.Secrets(ctx, BootstrapTokenNamespace, BootstrapTokenSecretPrefix+id)
	if err != nil {
		if apierrors.IsNotFound(err) || errors.Is(err, errdefs.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("bootstrap token %s: reading its secret: %w", id, err)
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	if s.DeletionTimestamp != nil || s.Type != BootstrapTokenSecretType ||
		string(s.Data[BootstrapTokenIDKey]) != id || string(s.Data[BootstrapTokenUsageAuthKey]) != "true" ||
		subtle.ConstantTimeCompare(s.Data[BootstrapTokenSecretKey], []byte(secret)) != 1 {
		return nil, false, nil
	}
	if expired, _ := BootstrapTokenExpiry(s, now()); expired {
		return nil, false, nil
	}
	groups := []string{BootstrappersGroup}
	if extra := string(s.Data[BootstrapTokenExtraGroupsKey]); extra != "" {
		for _, g := range strings.Split(extra, ",") {
			g = strings.TrimSpace(g)
			if !extraGroupRE.MatchString(g) {
				return nil, false, nil
			}
			groups = append(groups, g)
		}
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: BootstrapUserPrefix + id, Groups: groups}}, true, nil
}
