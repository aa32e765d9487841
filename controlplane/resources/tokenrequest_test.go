package resources

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"berth/controlplane/serviceaccount"
)

// objects is a rest.Getter over fixed objects, keyed "namespace/name".
type objects map[string]runtime.Object

func (o objects) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	if obj, ok := o[ns+"/"+name]; ok {
		return obj.DeepCopyObject(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("objects"), name)
}

var _ rest.Getter = objects{}

type tokenFixture struct {
	rest   *tokenRequestREST
	issuer *serviceaccount.Issuer
	auth   func(token string) error
}

func newTokenFixture(t *testing.T, cfg TokenRequestConfig) *tokenFixture {
	t.Helper()
	key, err := serviceaccount.EnsureKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := serviceaccount.NewIssuer(serviceaccount.IssuerConfig{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	lookup := serviceaccount.RESTGetter{
		ServiceAccounts: objects{
			"ns/default": &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "sa-uid"}},
		},
		Pods: objects{
			"ns/web": &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "pod-uid"},
				Spec: corev1.PodSpec{ServiceAccountName: "default", NodeName: "n1"}},
			"ns/other": &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: "other-uid"},
				Spec: corev1.PodSpec{ServiceAccountName: "builder"}},
		},
		Secrets: objects{"ns/s": &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "secret-uid"}}},
		Nodes:   objects{"/n1": &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}},
	}
	cfg.Issuer = issuer
	if len(cfg.APIAudiences) == 0 {
		cfg.APIAudiences = []string{issuer.Issuer()}
	}
	auth, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{Keys: []crypto.PublicKey{issuer.PublicKey()}, Getter: lookup})
	if err != nil {
		t.Fatal(err)
	}
	return &tokenFixture{rest: &tokenRequestREST{cfg: cfg, lookup: lookup}, issuer: issuer, auth: func(tok string) error {
		_, ok, err := auth.AuthenticateToken(context.Background(), tok)
		if !ok && err == nil {
			err = errors.New("token not recognised")
		}
		return err
	}}
}

func (f *tokenFixture) create(spec authenticationv1.TokenRequestSpec, validate rest.ValidateObjectFunc) (*authenticationv1.TokenRequest, error) {
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	out, err := f.rest.Create(ctx, "default", &authenticationv1.TokenRequest{Spec: spec}, validate, &metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return out.(*authenticationv1.TokenRequest), nil
}

// payload decodes a token's claims.
func payload(t *testing.T, tok string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTokenRequestDefaults(t *testing.T) {
	f := newTokenFixture(t, TokenRequestConfig{})
	tr, err := f.create(authenticationv1.TokenRequestSpec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *tr.Spec.ExpirationSeconds != 3600 || len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != serviceaccount.DefaultIssuer {
		t.Errorf("defaulted spec %+v", tr.Spec)
	}
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); left < 59*time.Minute || left > time.Hour {
		t.Errorf("expires in %s, want an hour", left)
	}
	if err := f.auth(tr.Status.Token); err != nil {
		t.Fatalf("issued token refused: %v", err)
	}
}

func TestTokenRequestPodBinding(t *testing.T) {
	f := newTokenFixture(t, TokenRequestConfig{ExtendExpiration: true})
	tr, err := f.create(authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607),
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "pod-uid"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.auth(tr.Status.Token); err != nil {
		t.Fatalf("pod-bound token refused: %v", err)
	}
	claims := payload(t, tr.Status.Token)
	k := claims["kubernetes.io"].(map[string]any)
	if pod := k["pod"].(map[string]any); pod["name"] != "web" || pod["uid"] != "pod-uid" {
		t.Errorf("pod claim %v", pod)
	}
	if node := k["node"].(map[string]any); node["name"] != "n1" || node["uid"] != "node-uid" {
		t.Errorf("node claim %v (the pod's node)", node)
	}
	// Extended: valid a year, stale after the 3607 s asked for, and the
	// status shows what was asked for.
	iat, exp, warn := claims["iat"].(float64), claims["exp"].(float64), k["warnafter"].(float64)
	if exp-iat != 365*24*3600 || warn-iat != 3607 {
		t.Errorf("iat %v exp %v warnafter %v, want a year and 3607 s", iat, exp, warn)
	}
	if got := tr.Status.ExpirationTimestamp.Unix() - int64(iat); got != 3607 {
		t.Errorf("status expires %d s after issue, want 3607", got)
	}

	// Not extended for another audience.
	tr, err = f.create(authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607), Audiences: []string{"vault"},
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	claims = payload(t, tr.Status.Token)
	if claims["exp"].(float64)-claims["iat"].(float64) != 3607 || claims["kubernetes.io"].(map[string]any)["warnafter"] != nil {
		t.Errorf("vault token extended: %v", claims)
	}
}

func TestTokenRequestOtherBindings(t *testing.T) {
	f := newTokenFixture(t, TokenRequestConfig{})
	for _, ref := range []authenticationv1.BoundObjectReference{
		{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "secret-uid"},
		{APIVersion: "v1", Kind: "Node", Name: "n1"},
	} {
		tr, err := f.create(authenticationv1.TokenRequestSpec{BoundObjectRef: &ref}, nil)
		if err != nil {
			t.Fatalf("%s: %v", ref.Kind, err)
		}
		if err := f.auth(tr.Status.Token); err != nil {
			t.Fatalf("%s-bound token refused: %v", ref.Kind, err)
		}
		if _, ok := payload(t, tr.Status.Token)["kubernetes.io"].(map[string]any)[strings.ToLower(ref.Kind)]; !ok {
			t.Errorf("%s-bound token lacks the %s claim", ref.Kind, strings.ToLower(ref.Kind))
		}
	}
}

func TestTokenRequestRefusals(t *testing.T) {
	f := newTokenFixture(t, TokenRequestConfig{})
	pod := func(name, uid string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: uidOf(uid)}
	}
	for name, tc := range map[string]struct {
		spec  authenticationv1.TokenRequestSpec
		check func(error) bool
		msg   string
	}{
		"too short":        {authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](599)}, apierrors.IsInvalid, "may not specify a duration less than 10 minutes"},
		"too long":         {authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](1<<32 + 1)}, apierrors.IsInvalid, "larger than 2^32 seconds"},
		"missing pod":      {authenticationv1.TokenRequestSpec{BoundObjectRef: pod("gone", "")}, apierrors.IsNotFound, "gone"},
		"uid mismatch":     {authenticationv1.TokenRequestSpec{BoundObjectRef: pod("web", "old-uid")}, apierrors.IsConflict, "the UID in the bound object reference (old-uid) does not match"},
		"other account":    {authenticationv1.TokenRequestSpec{BoundObjectRef: pod("other", "")}, apierrors.IsBadRequest, "pod running with different serviceaccount name"},
		"unsupported kind": {authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d"}}, apierrors.IsBadRequest, "to object of type apps/v1, Kind=Deployment"},
		"ref without name": {authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod"}}, apierrors.IsInvalid, "spec.boundObjectRef.name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.create(tc.spec, nil)
			if !tc.check(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %v, want one mentioning %q", err, tc.msg)
			}
		})
	}
	t.Run("missing service account", func(t *testing.T) {
		ctx := genericapirequest.WithNamespace(context.Background(), "ns")
		_, err := f.rest.Create(ctx, "ghost", &authenticationv1.TokenRequest{}, nil, &metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("err %v, want NotFound", err)
		}
	})
	t.Run("admission refuses", func(t *testing.T) {
		no := apierrors.NewForbidden(corev1.Resource("serviceaccounts/token"), "default", errors.New("node may not"))
		var seen *authenticationv1.TokenRequest
		_, err := f.create(authenticationv1.TokenRequestSpec{}, func(_ context.Context, obj runtime.Object) error {
			seen = obj.(*authenticationv1.TokenRequest)
			return no
		})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("err %v, want the admission's Forbidden", err)
		}
		if seen == nil || *seen.Spec.ExpirationSeconds != 3600 {
			t.Fatalf("admission saw %+v, want the defaulted request", seen)
		}
	})
}

func TestTokenRequestMaxExpiration(t *testing.T) {
	f := newTokenFixture(t, TokenRequestConfig{MaxExpiration: 2 * time.Hour})
	tr, err := f.create(authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](48 * 3600)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *tr.Spec.ExpirationSeconds != 7200 {
		t.Errorf("expirationSeconds %d, want shortened to 7200", *tr.Spec.ExpirationSeconds)
	}
	c := payload(t, tr.Status.Token)
	if c["exp"].(float64)-c["iat"].(float64) != 7200 {
		t.Errorf("token lifetime %v, want 7200", c["exp"].(float64)-c["iat"].(float64))
	}
}

func uidOf(s string) types.UID { return types.UID(s) }
