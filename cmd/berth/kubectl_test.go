package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"berth/controlplane/pki"
)

// writeKubeconfig writes a kubeconfig whose one cluster is at server.
func writeKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q}
users:
- name: u
  user: {token: not-a-real-token}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`, server)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultKubeconfig(t *testing.T) {
	withAdmin := t.TempDir()
	admin := filepath.Join(withAdmin, pki.KubeconfigFile)
	writeKubeconfig(t, admin, "https://admin.invalid:6443")
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"the data dir's admin kubeconfig", map[string]string{dataDirEnv: withAdmin}, admin},
		{"$KUBECONFIG wins", map[string]string{dataDirEnv: withAdmin, "KUBECONFIG": "/elsewhere"}, ""},
		{"no admin kubeconfig in the data dir: kubectl's own default", map[string]string{dataDirEnv: empty}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := defaultKubeconfig(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("defaultKubeconfig = %q, want %q", got, tc.want)
			}
		})
	}
}

// runBerth runs `berth ARGS...` in this process and returns its stdout.
func runBerth(t *testing.T, args ...string) string {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("berth %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

func TestKubectlChoosesTheKubeconfig(t *testing.T) {
	dataDir := t.TempDir()
	writeKubeconfig(t, filepath.Join(dataDir, pki.KubeconfigFile), "https://admin.invalid:6443")
	other := filepath.Join(t.TempDir(), "other.kubeconfig")
	writeKubeconfig(t, other, "https://other.invalid:6443")
	server := []string{"kubectl", "config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"}

	t.Setenv(dataDirEnv, dataDir)
	t.Setenv("KUBECONFIG", "")
	if got := runBerth(t, server...); got != "https://admin.invalid:6443" {
		t.Errorf("with %s set and no kubeconfig given, kubectl talks to %q, want the admin kubeconfig's https://admin.invalid:6443", dataDirEnv, got)
	}
	if got := runBerth(t, append(server, "--kubeconfig", other)...); got != "https://other.invalid:6443" {
		t.Errorf("with --kubeconfig, kubectl talks to %q, want https://other.invalid:6443", got)
	}
	if got := runBerth(t, append(server, "--kubeconfig="+other)...); got != "https://other.invalid:6443" {
		t.Errorf("with --kubeconfig=, kubectl talks to %q, want https://other.invalid:6443", got)
	}
	t.Setenv("KUBECONFIG", other)
	if got := runBerth(t, server...); got != "https://other.invalid:6443" {
		t.Errorf("with $KUBECONFIG, kubectl talks to %q, want https://other.invalid:6443", got)
	}
}

func TestKubectlFlagsAndHelpAreKubectls(t *testing.T) {
	t.Setenv(dataDirEnv, t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kubectl", "--help"}, "kubectl controls the Kubernetes cluster manager"},
		{[]string{"kubectl", "-h"}, "kubectl controls the Kubernetes cluster manager"},
		{[]string{"kubectl", "get", "--help"}, "Display one or many resources"},
		{[]string{"kubectl", "options"}, "--kubeconfig"},
		{[]string{"kubectl", "version", "--client", "-o", "json"}, `"clientVersion"`},
	} {
		if got := runBerth(t, tc.args...); !strings.Contains(got, tc.want) {
			t.Errorf("berth %s printed:\n%s\nwant it to contain %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}

// helperEnv makes the test binary act as berth (see TestMain).
const helperEnv = "BERTH_TEST_HELPER_PROCESS"

// TestMain runs berth's main instead of the tests when the test binary is
// re-run by runBerthProcess: its arguments are then berth's, from the
// start of the process (package initializers see them too).
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runBerthProcess runs berth ARGS in a child process (kubectl exits the
// process itself) and returns its exit code and output.
func runBerthProcess(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), helperEnv+"=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errOut.String()
	default:
		t.Fatalf("running berth %v: %v", args, err)
		return 0, "", ""
	}
}

// TestKubectlSpeaksTheUsersLanguage: kubectl's translations are loaded for
// `berth kubectl` (internal/kubectli18n loads them for no other role).
func TestKubectlSpeaksTheUsersLanguage(t *testing.T) {
	env := []string{dataDirEnv + "=" + t.TempDir(), "KUBECONFIG=", "LC_ALL=", "LC_MESSAGES="}
	for _, tc := range []struct{ lang, want string }{
		{"ja_JP.UTF-8", "1つまたは複数のリソースを表示する"},
		{"de_DE.UTF-8", "Zeige eine oder mehrere Resourcen"},
		{"C", "Display one or many resources"},
	} {
		code, out, stderr := runBerthProcess(t, append(env, "LANG="+tc.lang), "kubectl", "--help")
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("LANG=%s berth kubectl --help exited %d, printed:\n%s%s\nwant it to contain %q", tc.lang, code, out, stderr, tc.want)
		}
	}
}

func TestKubectlExitCodesAreKubectls(t *testing.T) {
	env := []string{dataDirEnv + "=" + t.TempDir(), "KUBECONFIG="}
	missing := filepath.Join(t.TempDir(), "missing.kubeconfig")
	for _, tc := range []struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		{[]string{"kubectl", "version", "--client"}, 0, ""},
		{[]string{"kubectl", "get", "pods", "--kubeconfig", missing}, 1, missing},
		{[]string{"kubectl", "no-such-command"}, 1, `unknown command "no-such-command" for "kubectl"`},
		{[]string{"kubectl", "get", "pods", "--no-such-flag"}, 1, "unknown flag: --no-such-flag"},
	} {
		code, _, stderr := runBerthProcess(t, env, tc.args...)
		if code != tc.wantCode {
			t.Errorf("berth %s exited %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.wantCode, stderr)
		}
		if !strings.Contains(stderr, tc.wantStderr) {
			t.Errorf("berth %s printed on stderr:\n%s\nwant it to contain %q", strings.Join(tc.args, " "), stderr, tc.wantStderr)
		}
	}
}
