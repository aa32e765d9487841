package serviceaccount

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
)

// jwtClaims decodes the payload of a JWT (not verifying it).
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// --service-account-issuer and --api-audiences: tokens carry the issuer
// and, unless asked otherwise, the API audiences; the apiserver accepts
// them, and refuses a token for another audience.
func TestServiceAccountIssuerAndAudiences(t *testing.T) {
	const issuer = "https://berth-issuer.test.example"
	c := harness.StartServer(t, harness.ServerOptions{Args: []string{
		"--service-account-issuer", issuer, "--api-audiences", "api-one,api-two"}})
	ctx := context.Background()
	const ns = "default"
	sa, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "issuer-test"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expiry := int64(600)
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims := jwtClaims(t, tr.Status.Token)
	var aud []string
	if list, ok := claims["aud"].([]any); ok {
		for _, a := range list {
			s, _ := a.(string)
			aud = append(aud, s)
		}
	}
	if claims["iss"] != issuer || !slices.Equal(aud, []string{"api-one", "api-two"}) || !slices.Equal(tr.Spec.Audiences, aud) {
		t.Fatalf("token claims iss %v aud %v (spec audiences %v), want %s [api-one api-two]", claims["iss"], claims["aud"], tr.Spec.Audiences, issuer)
	}
	me, err := tokenClient(t, c, tr.Status.Token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || me.Status.UserInfo.Username != "system:serviceaccount:default:issuer-test" {
		t.Fatalf("the token's identity: %+v %v", me, err)
	}
	review, err := c.Client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated || !slices.Equal(review.Status.Audiences, []string{"api-one", "api-two"}) {
		t.Fatalf("TokenReview: %+v %v", review, err)
	}

	other, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokenClient(t, c, other.Status.Token).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("a token for audience vault at the apiserver: %v, want 401", err)
	}
}
