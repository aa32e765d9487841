package authz

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
)

// agentTokenExpiry is the expiry of the server's first join token.
func agentTokenExpiry(t *testing.T, s *server) (string, time.Time) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.Dir, "agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	id, _, _ := strings.Cut(token, ".")
	sec, err := s.admin.CoreV1().Secrets("kube-system").Get(context.Background(), "bootstrap-token-"+id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exp := string(sec.Data["expiration"])
	if exp == "" {
		return token, time.Time{}
	}
	at, err := time.Parse(time.RFC3339, exp)
	if err != nil {
		t.Fatalf("expiration %q: %v", exp, err)
	}
	return token, at
}

// The join token `berth server` makes on first start expires after
// --token-ttl: 24 h by default (as kubeadm's), never with 0.
func TestJoinTokenTTL(t *testing.T) {
	if _, at := agentTokenExpiry(t, shared); at.Before(time.Now().Add(23*time.Hour)) || at.After(time.Now().Add(24*time.Hour)) {
		t.Fatalf("the default join token expires at %v, want in 24 h", at)
	}
	s := startServer(t, "--token-ttl", "0")
	if _, at := agentTokenExpiry(t, s); !at.IsZero() {
		t.Fatalf("with --token-ttl 0 the join token expires at %v, want never", at)
	}
}

// `berth token create|list|delete` manage bootstrap tokens as `kubeadm
// token` does: a created token authenticates until it expires or is
// deleted.
func TestTokenCommand(t *testing.T) {
	bin := harness.Binary(t)
	berth := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"token", "--kubeconfig", filepath.Join(shared.Dir, "admin.kubeconfig")}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := berth("create", "--ttl", "2h", "--description", "rack 4", "--groups", "system:bootstrappers:rack4")
	if err != nil {
		t.Fatalf("berth token create: %v\n%s", err, out)
	}
	token := strings.TrimSpace(out)
	if !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`).MatchString(token) {
		t.Fatalf("berth token create printed %q, want a bootstrap token", token)
	}
	id, _, _ := strings.Cut(token, ".")
	u, err := whoami(t, token)
	if err != nil || u.Username != "system:bootstrap:"+id || !strings.Contains(strings.Join(u.Groups, ","), "system:bootstrappers:rack4") {
		t.Fatalf("the created token authenticates as %+v %v", u, err)
	}
	out, err = berth("list")
	if err != nil {
		t.Fatalf("berth token list: %v\n%s", err, out)
	}
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(token) + `\s+(1h|2h)\s+\S+\s+authentication\s+rack 4\s+system:bootstrappers:rack4$`)
	if !strings.HasPrefix(out, "TOKEN ") || !line.MatchString(out) {
		t.Fatalf("berth token list:\n%s\nwant a line for %s with TTL 2h, usage, description and group", out, token)
	}

	// Expired: refused, and the token cleaner deletes its Secret.
	ctx := context.Background()
	secrets := shared.admin.CoreV1().Secrets("kube-system")
	sec, err := secrets.Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["expiration"] = []byte(time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	if _, err := secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if u, err := whoami(t, token); err == nil {
		t.Fatalf("an expired token authenticated as %+v", u)
	}
	harness.WaitFor(t, time.Minute, "the token cleaner to delete the expired token", func() (bool, string) {
		_, err := secrets.Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})

	// Deleted by ID: gone; deleting again names the ID.
	if out, err = berth("create", "--ttl", "1h"); err != nil {
		t.Fatalf("berth token create: %v\n%s", err, out)
	}
	token = strings.TrimSpace(out)
	id, _, _ = strings.Cut(token, ".")
	if out, err := berth("delete", id); err != nil || !strings.Contains(out, id) {
		t.Fatalf("berth token delete %s: %v\n%s", id, err, out)
	}
	if _, err := secrets.Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{}); err == nil {
		t.Fatal("the deleted token's secret is still there")
	}
	if out, err := berth("delete", token); err == nil || !strings.Contains(out, `no token with ID "`+id+`"`) {
		t.Fatalf("deleting a deleted token: %v\n%s, want an error naming it", err, out)
	}

	// A token given on the command line, never expiring; bad input named.
	const fixed = "rack05.0123456789abcdef"
	if out, err := berth("create", fixed, "--ttl", "0"); err != nil || strings.TrimSpace(out) != fixed {
		t.Fatalf("berth token create %s: %v\n%s", fixed, err, out)
	}
	t.Cleanup(func() { _, _ = berth("delete", "rack05") })
	if out, _ := berth("list"); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(fixed) + `\s+<forever>\s+<never>`).MatchString(out) {
		t.Fatalf("berth token list:\n%s\nwant %s with <forever>", out, fixed)
	}
	for _, args := range [][]string{{"create", "NOT-A-TOKEN"}, {"create", "--ttl", "-1h"}, {"create", "--groups", "admins"}, {"delete", "x"}} {
		if out, err := berth(args...); err == nil {
			t.Errorf("berth token %v succeeded:\n%s", args, out)
		}
	}
}
