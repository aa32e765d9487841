// Package serviceaccount issues and verifies service-account tokens: JWTs
// signed with a key kept in the server's data directory (EnsureKey), with
// upstream's claims (iss, sub system:serviceaccount:NS:NAME, aud, exp, iat,
// nbf, jti and the private "kubernetes.io" claim naming the namespace, the
// service account and the pod, secret or node the token is bound to), and
// an authenticator.Token (NewAuthenticator) that accepts them only while
// the service account and the bound object still exist with the same UID.
package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// DefaultIssuer is the "iss" of berth's tokens unless configured otherwise
// (kube-apiserver's usual --service-account-issuer).
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// UsernamePrefix starts every service account's user name:
// system:serviceaccount:NAMESPACE:NAME.
const UsernamePrefix = "system:serviceaccount:"

// Username is the user name of a service account.
func Username(namespace, name string) string {
	return UsernamePrefix + namespace + ":" + name
}

// SplitUsername returns the namespace and name of a service-account user
// name, or false when it is not one.
func SplitUsername(username string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(username, UsernamePrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// IssuerConfig configures an Issuer.
type IssuerConfig struct {
	// Key signs the tokens: ECDSA (P-256, P-384, P-521) or RSA; required.
	Key crypto.Signer
	// Issuer is the "iss" claim; default DefaultIssuer.
	Issuer string
	// Clock stamps iat, nbf and exp; nil is real time.
	Clock clock.PassiveClock
}

// Issuer signs service-account tokens.
type Issuer struct {
	issuer string
	clock  clock.PassiveClock
	signer jose.Signer
	public crypto.PublicKey
}

// NewIssuer validates cfg and returns an Issuer.
func NewIssuer(cfg IssuerConfig) (*Issuer, error) {
	if cfg.Key == nil {
		return nil, fmt.Errorf("serviceaccount issuer: Key is required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Issuer == "" {
		cfg.Issuer = DefaultIssuer
	}
	if strings.Contains(cfg.Issuer, ":") && !strings.HasPrefix(cfg.Issuer, "https://") {
		return nil, fmt.Errorf("serviceaccount issuer: issuer %q: a URL must use the https scheme: %w", cfg.Issuer, errdefs.ErrInvalidArgument)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	alg, err := signatureAlgorithm(cfg.Key.Public())
	if err != nil {
		return nil, fmt.Errorf("serviceaccount issuer: %w", err)
	}
	kid, err := KeyID(cfg.Key.Public())
	if err != nil {
		return nil, fmt.Errorf("serviceaccount issuer: %w", err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: cfg.Key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("serviceaccount issuer: %w", err)
	}
	return &Issuer{issuer: cfg.Issuer, clock: cfg.Clock, signer: signer, public: cfg.Key.Public()}, nil
}

// Issuer is the "iss" claim of the tokens.
func (i *Issuer) Issuer() string { return i.issuer }

// PublicKey verifies the tokens.
func (i *Issuer) PublicKey() crypto.PublicKey { return i.public }

// TokenSpec says what a token is for.
type TokenSpec struct {
	// ServiceAccount is the token's subject; required, with its UID.
	ServiceAccount *corev1.ServiceAccount
	// Audiences are the "aud" claim; at least one.
	Audiences []string
	// Lifetime is the time from issue to "exp"; positive.
	Lifetime time.Duration
	// WarnAfter, when positive and shorter than Lifetime, is stamped as
	// the "warnafter" private claim: from then on the token is stale (an
	// extended-expiry token the holder should have rotated).
	WarnAfter time.Duration
	// Pod, Secret and Node bind the token: at most one of Pod and Secret;
	// Node alone, or the node the Pod runs on.
	Pod    *corev1.Pod
	Secret *corev1.Secret
	Node   *corev1.Node
}

// ref names a bound object in the private claims.
type ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// kubernetesClaims is the "kubernetes.io" private claim.
type kubernetesClaims struct {
	Namespace      string           `json:"namespace"`
	ServiceAccount ref              `json:"serviceaccount"`
	Pod            *ref             `json:"pod,omitempty"`
	Secret         *ref             `json:"secret,omitempty"`
	Node           *ref             `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

type privateClaims struct {
	Kubernetes *kubernetesClaims `json:"kubernetes.io,omitempty"`
}

// Issue signs a token for spec; it returns the token and its expiry.
func (i *Issuer) Issue(spec TokenSpec) (string, time.Time, error) {
	sa := spec.ServiceAccount
	switch {
	case sa == nil || sa.Name == "" || sa.Namespace == "" || sa.UID == "":
		return "", time.Time{}, fmt.Errorf("serviceaccount token: the service account with its name, namespace and uid is required: %w", errdefs.ErrInvalidArgument)
	case len(spec.Audiences) == 0:
		return "", time.Time{}, fmt.Errorf("serviceaccount token: at least one audience is required: %w", errdefs.ErrInvalidArgument)
	case spec.Lifetime <= 0:
		return "", time.Time{}, fmt.Errorf("serviceaccount token: lifetime %s must be positive: %w", spec.Lifetime, errdefs.ErrInvalidArgument)
	case spec.Pod != nil && spec.Secret != nil:
		return "", time.Time{}, fmt.Errorf("serviceaccount token: a token binds to a pod or a secret, not both: %w", errdefs.ErrInvalidArgument)
	}
	now := i.clock.Now().Truncate(time.Second)
	exp := now.Add(spec.Lifetime)
	k := &kubernetesClaims{Namespace: sa.Namespace, ServiceAccount: ref{Name: sa.Name, UID: string(sa.UID)}}
	if p := spec.Pod; p != nil {
		if p.Namespace != sa.Namespace {
			return "", time.Time{}, fmt.Errorf("serviceaccount token: pod %s/%s is not in the service account's namespace %s: %w", p.Namespace, p.Name, sa.Namespace, errdefs.ErrInvalidArgument)
		}
		k.Pod = &ref{Name: p.Name, UID: string(p.UID)}
	}
	if s := spec.Secret; s != nil {
		if s.Namespace != sa.Namespace {
			return "", time.Time{}, fmt.Errorf("serviceaccount token: secret %s/%s is not in the service account's namespace %s: %w", s.Namespace, s.Name, sa.Namespace, errdefs.ErrInvalidArgument)
		}
		k.Secret = &ref{Name: s.Name, UID: string(s.UID)}
	}
	if n := spec.Node; n != nil {
		k.Node = &ref{Name: n.Name, UID: string(n.UID)}
	}
	if spec.WarnAfter > 0 && spec.WarnAfter < spec.Lifetime {
		k.WarnAfter = jwt.NewNumericDate(now.Add(spec.WarnAfter))
	}
	pub := jwt.Claims{
		Issuer:    i.issuer,
		Subject:   Username(sa.Namespace, sa.Name),
		Expiry:    jwt.NewNumericDate(exp),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ID:        uuid.NewString(),
	}
	// "aud" is always a list, as upstream's tokens have it (go-jose would
	// write a lone audience as a string).
	aud := struct {
		Audience []string `json:"aud"`
	}{spec.Audiences}
	tok, err := jwt.Signed(i.signer).Claims(pub).Claims(aud).Claims(privateClaims{Kubernetes: k}).Serialize()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("serviceaccount token: signing: %w", err)
	}
	return tok, exp, nil
}

// KeyID is the "kid" header of tokens signed by the key: the unpadded
// base64url SHA-256 of the public key's PKIX encoding, as upstream.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// signatureAlgorithm is the JWS algorithm for a public key.
func signatureAlgorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
		return "", fmt.Errorf("ECDSA curve %s: want P-256, P-384 or P-521: %w", k.Curve.Params().Name, errdefs.ErrInvalidArgument)
	}
	return "", fmt.Errorf("key of type %T: want ECDSA or RSA: %w", pub, errdefs.ErrInvalidArgument)
}
