package serviceaccount

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// Groups every service account is in, and the per-namespace group prefix
// (system:serviceaccounts:NAMESPACE).
const (
	AllServiceAccountsGroup = "system:serviceaccounts"
	NamespaceGroupPrefix    = "system:serviceaccounts:"
)

// Extra keys of a service account's user info, as upstream.
const (
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
)

// Leeway is the clock skew tolerated on exp, nbf and iat, and how long a
// pod marked for deletion keeps its tokens valid.
const Leeway = time.Minute

// Getter reads the objects a token names, from storage (not a cache, so a
// deleted pod's token is refused at once). Not-found errors are
// k8s.io/apimachinery NotFound status errors.
type Getter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// AuthenticatorConfig configures NewAuthenticator.
type AuthenticatorConfig struct {
	// Keys verify signatures (the Issuer's PublicKey, plus any older
	// keys still trusted); at least one.
	Keys []crypto.PublicKey
	// Issuers are the accepted "iss" values; default [DefaultIssuer].
	// Tokens of other issuers are left to the next authenticator.
	Issuers []string
	// APIAudiences are the audiences the API server accepts when the
	// request context names none (authenticator.WithAudiences); default
	// Issuers.
	APIAudiences []string
	// Getter looks up service accounts and bound objects; required.
	Getter Getter
	// Clock checks expiry; nil is real time.
	Clock clock.PassiveClock
}

// Validate fills defaults and checks every field, naming the bad one.
func (c *AuthenticatorConfig) Validate() error {
	if len(c.Keys) == 0 {
		return fmt.Errorf("serviceaccount authenticator: Keys: at least one public key is required: %w", errdefs.ErrInvalidArgument)
	}
	for i, k := range c.Keys {
		if _, err := signatureAlgorithm(k); err != nil {
			return fmt.Errorf("serviceaccount authenticator: Keys[%d]: %w", i, err)
		}
	}
	if c.Getter == nil {
		return fmt.Errorf("serviceaccount authenticator: Getter is required: %w", errdefs.ErrInvalidArgument)
	}
	if len(c.Issuers) == 0 {
		c.Issuers = []string{DefaultIssuer}
	}
	if len(c.APIAudiences) == 0 {
		c.APIAudiences = slices.Clone(c.Issuers)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// tokenAuthenticator verifies berth's service-account tokens.
type tokenAuthenticator struct {
	cfg AuthenticatorConfig
}

// NewAuthenticator returns an authenticator.Token accepting service-account
// tokens signed by one of cfg.Keys, from one of cfg.Issuers, unexpired, for
// an accepted audience, whose service account and bound pod, secret or node
// still exist with the UIDs in the token. A bearer token that is not a JWT
// of those issuers is not its business: (nil, false, nil).
func NewAuthenticator(cfg AuthenticatorConfig) (authenticator.Token, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &tokenAuthenticator{cfg: cfg}, nil
}

var allowedAlgorithms = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256}

// errInvalid classifies a refused service-account token.
func errInvalid(format string, args ...any) error {
	return fmt.Errorf("service account token: %s: %w", fmt.Sprintf(format, args...), errdefs.ErrUnauthenticated)
}

// AuthenticateToken implements authenticator.Token.
func (a *tokenAuthenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	tok, err := jwt.ParseSigned(token, allowedAlgorithms)
	if err != nil {
		return nil, false, nil // not a JWS: another authenticator's token
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || !slices.Contains(a.cfg.Issuers, unverified.Issuer) {
		return nil, false, nil
	}
	var pub jwt.Claims
	var priv privateClaims
	verified := false
	for _, key := range a.cfg.Keys {
		if err := tok.Claims(key, &pub, &priv); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, false, errInvalid("invalid signature")
	}
	now := a.cfg.Clock.Now()
	if err := pub.ValidateWithLeeway(jwt.Expected{Time: now}, Leeway); err != nil {
		if errors.Is(err, jwt.ErrExpired) {
			return nil, false, errInvalid("token has expired")
		}
		return nil, false, errInvalid("%v", err)
	}
	if pub.Expiry == nil {
		return nil, false, errInvalid("token has no expiry")
	}
	wanted, ok := authenticator.AudiencesFrom(ctx)
	if !ok || len(wanted) == 0 {
		wanted = a.cfg.APIAudiences
	}
	var auds authenticator.Audiences
	for _, aud := range pub.Audience {
		if slices.Contains(wanted, aud) {
			auds = append(auds, aud)
		}
	}
	if len(auds) == 0 {
		return nil, false, errInvalid("token audiences %q are not among the accepted %q", []string(pub.Audience), []string(wanted))
	}
	k := priv.Kubernetes
	if k == nil {
		return nil, false, errInvalid("no %q claim", "kubernetes.io")
	}
	if pub.Subject != Username(k.Namespace, k.ServiceAccount.Name) {
		return nil, false, errInvalid("subject %q does not name the service account %s/%s", pub.Subject, k.Namespace, k.ServiceAccount.Name)
	}
	if err := a.checkBound(ctx, k, now); err != nil {
		return nil, false, err
	}
	info := &user.DefaultInfo{
		Name:   pub.Subject,
		UID:    k.ServiceAccount.UID,
		Groups: []string{AllServiceAccountsGroup, NamespaceGroupPrefix + k.Namespace, user.AllAuthenticated},
		Extra:  map[string][]string{},
	}
	if pub.ID != "" {
		info.Extra[ExtraCredentialID] = []string{"JTI=" + pub.ID}
	}
	if k.Pod != nil {
		info.Extra[ExtraPodName] = []string{k.Pod.Name}
		info.Extra[ExtraPodUID] = []string{k.Pod.UID}
	}
	if k.Node != nil {
		info.Extra[ExtraNodeName] = []string{k.Node.Name}
		if k.Node.UID != "" {
			info.Extra[ExtraNodeUID] = []string{k.Node.UID}
		}
	}
	return &authenticator.Response{User: info, Audiences: auds}, true, nil
}

// checkBound refuses the token unless its service account and bound
// object exist with the UIDs it names. A pod marked for deletion more than
// Leeway ago counts as gone.
func (a *tokenAuthenticator) checkBound(ctx context.Context, k *kubernetesClaims, now time.Time) error {
	ns := k.Namespace
	sa, err := a.cfg.Getter.GetServiceAccount(ctx, ns, k.ServiceAccount.Name)
	if err != nil {
		return lookupError("service account", ns+"/"+k.ServiceAccount.Name, err)
	}
	if sa.DeletionTimestamp != nil {
		return errInvalid("service account %s/%s is being deleted", ns, sa.Name)
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return errInvalid("service account %s/%s UID (%s) does not match the claim (%s)", ns, sa.Name, sa.UID, k.ServiceAccount.UID)
	}
	switch {
	case k.Pod != nil:
		pod, err := a.cfg.Getter.GetPod(ctx, ns, k.Pod.Name)
		if err != nil {
			return lookupError("pod", ns+"/"+k.Pod.Name, err)
		}
		if string(pod.UID) != k.Pod.UID {
			return errInvalid("pod %s/%s UID (%s) does not match the claim (%s)", ns, pod.Name, pod.UID, k.Pod.UID)
		}
		if pod.DeletionTimestamp != nil && pod.DeletionTimestamp.Time.Before(now.Add(-Leeway)) {
			return errInvalid("pod %s/%s has been deleted", ns, pod.Name)
		}
	case k.Secret != nil:
		secret, err := a.cfg.Getter.GetSecret(ctx, ns, k.Secret.Name)
		if err != nil {
			return lookupError("secret", ns+"/"+k.Secret.Name, err)
		}
		if string(secret.UID) != k.Secret.UID {
			return errInvalid("secret %s/%s UID (%s) does not match the claim (%s)", ns, secret.Name, secret.UID, k.Secret.UID)
		}
		if secret.DeletionTimestamp != nil && secret.DeletionTimestamp.Time.Before(now.Add(-Leeway)) {
			return errInvalid("secret %s/%s has been deleted", ns, secret.Name)
		}
	case k.Node != nil:
		node, err := a.cfg.Getter.GetNode(ctx, k.Node.Name)
		if err != nil {
			return lookupError("node", k.Node.Name, err)
		}
		if string(node.UID) != k.Node.UID {
			return errInvalid("node %s UID (%s) does not match the claim (%s)", node.Name, node.UID, k.Node.UID)
		}
		if node.DeletionTimestamp != nil && node.DeletionTimestamp.Time.Before(now.Add(-Leeway)) {
			return errInvalid("node %s has been deleted", node.Name)
		}
	}
	return nil
}

// lookupError: a missing object refuses the token; any other failure is
// the store's and is reported as unavailable.
func lookupError(what, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return errInvalid("%s %s has been deleted", what, name)
	}
	return fmt.Errorf("service account token: looking up %s %s: %v: %w", what, name, err, errdefs.ErrUnavailable)
}
