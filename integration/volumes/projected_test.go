package volumes_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A projected volume merges configMap, secret and downwardAPI sources into
// one read-only tmpfs, with the volume's defaultMode and per-item modes.
func TestProjectedVolume(t *testing.T) {
	ns := newNamespace(t)
	apply(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue, size: large}
---
apiVersion: v1
kind: Secret
metadata: {name: keys}
data: {token: dDBrM24=} # t0k3n
`)
	pod := runPod(t, ns, `
metadata:
  name: projected
  labels: {role: db}
spec:
  volumes:
  - name: merged
    projected:
      defaultMode: 0440
      sources:
      - configMap:
          name: settings
          items: [{key: color, path: config/color}]
      - secret:
          name: keys
          items: [{key: token, path: secret/token, mode: 0400}]
      - downwardAPI:
          items: [{path: meta/labels, fieldRef: {fieldPath: metadata.labels}}]
      - configMap: {name: absent, optional: true}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: merged, mountPath: /merged}]
`)
	for path, want := range map[string]string{
		"/merged/config/color": "blue", "/merged/secret/token": "t0k3n", "/merged/meta/labels": `role="db"`,
	} {
		if got := execIn(t, ns, pod.Name, "c", "cat", path); got != want {
			t.Errorf("%s reads %q, want %q", path, got, want)
		}
	}
	for path, want := range map[string]string{
		"/merged/config/color": "440", "/merged/secret/token": "400", "/merged/meta/labels": "440",
	} {
		if got := modeOf(t, ns, pod.Name, "c", path); got != want {
			t.Errorf("%s has mode %s, want %s", path, got, want)
		}
	}
	if got := visible(t, ns, pod.Name, "c", "/merged"); got != "config meta secret" {
		t.Errorf("/merged lists %q, want config meta secret", got)
	}
	if got := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "readlink", "/merged/config")); got != "..data/config" {
		t.Errorf("/merged/config links to %q, want ..data/config", got)
	}
	if line := mountLine(t, ns, pod.Name, "c", "/merged"); !strings.Contains(line, " tmpfs ") || !strings.Contains(line, " ro,") {
		t.Errorf("/merged is mounted as %q, want a read-only tmpfs", line)
	}
}

// jwtClaims decodes the claims of a JWT without checking its signature.
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("JWT claims: %v", err)
	}
	return claims
}

// A projected serviceAccountToken is a token from the TokenRequest API for
// the pod's service account, bound to the pod, with the audience and
// lifetime asked for; the API server accepts it as the service account.
func TestProjectedServiceAccountToken(t *testing.T) {
	ns := newNamespace(t)
	c := cluster(t)
	waitFor(t, time.Minute, "the default service account of "+ns, func() (bool, string) {
		_, err := c.Client.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	pod := runPod(t, ns, `
metadata: {name: token}
spec:
  volumes:
  - name: tokens
    projected:
      sources:
      - serviceAccountToken: {path: vault-token, audience: vault, expirationSeconds: 3600}
      - serviceAccountToken: {path: api-token}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: tokens, mountPath: /var/run/tokens}]
`)
	vault := execIn(t, ns, pod.Name, "c", "cat", "/var/run/tokens/vault-token")
	claims := jwtClaims(t, vault)
	if sub := claims["sub"]; sub != "system:serviceaccount:"+ns+":default" {
		t.Errorf("sub %v, want the pod's service account", sub)
	}
	if aud, _ := claims["aud"].([]any); len(aud) != 1 || aud[0] != "vault" {
		t.Errorf("aud %v, want [vault]", claims["aud"])
	}
	exp, _ := claims["exp"].(float64)
	iat, _ := claims["iat"].(float64)
	if life := exp - iat; life != 3600 {
		t.Errorf("the token lives %vs, want 3600", life)
	}
	k8s, _ := claims["kubernetes.io"].(map[string]any)
	boundPod, _ := k8s["pod"].(map[string]any)
	if boundPod["name"] != pod.Name || boundPod["uid"] != string(pod.UID) {
		t.Errorf("the token is bound to %v, want pod %s (%s)", k8s["pod"], pod.Name, pod.UID)
	}
	if got := modeOf(t, ns, pod.Name, "c", "/var/run/tokens/vault-token"); got != "644" {
		t.Errorf("the token file has mode %s, want 644 (the projected defaultMode)", got)
	}

	api := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "cat", "/var/run/tokens/api-token"))
	out, errOut, err := c.Kubectl(t, "", "--kubeconfig", "/dev/null", "--server", "https://"+c.Addr,
		"--certificate-authority", filepath.Join(c.DataDir, "ca.crt"), "--token", api, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if err != nil || out != "system:serviceaccount:"+ns+":default" {
		t.Errorf("kubectl auth whoami with the projected token: %q, %v %s; want the service account", out, err, errOut)
	}
}
