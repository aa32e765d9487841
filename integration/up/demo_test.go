package up

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"berth/integration/harness"
	"berth/internal/prereq"
)

// TestDemoRunsEndToEnd runs `make demo`'s script, hack/demo.sh, as make
// would (root, offline), on its own data dir, bridge, pod subnet and agent
// port: every step must pass and nothing may be left behind.
func TestDemoRunsEndToEnd(t *testing.T) {
	requirePrerequisites(t)
	var missing []string
	for _, cmd := range []string{"bash", "go", "ctr", "timeout"} {
		if _, err := exec.LookPath(cmd); err != nil {
			missing = append(missing, cmd)
		}
	}
	if len(missing) > 0 {
		prereq.Missing(t, "make demo needs %s on PATH", strings.Join(missing, ", "))
	}
	berth, pause := binaries(t)
	bridge, cidr := harness.ClaimSubnet(t, 223, "berthup")
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(shortTempDir(t), "demo")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repo, "hack", "demo.sh"))
	// On timeout the script gets SIGTERM: its trap stops berth up and the
	// registries by PID and reports the step it was at.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 90 * time.Second
	cmd.Env = append(os.Environ(),
		"BERTH="+berth,
		"DEMO_PAUSE="+pause,
		"DEMO_DIR="+work,
		"DEMO_BRIDGE="+bridge,
		"DEMO_POD_CIDR="+cidr,
		"DEMO_KUBELET_PORT="+strconv.Itoa(harness.FreePort(t)),
		"DEMO_TIMEOUT=120s",
	)
	out, err := cmd.CombinedOutput()
	log := string(out)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		t.Fatalf("hack/demo.sh exited %d:\n%s", exit.ExitCode(), log)
	default:
		t.Fatalf("hack/demo.sh: %v:\n%s", err, log)
	}

	// What each step shows, in order.
	rest := log
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`berth up: node \S+ Ready, pod CIDR ` + regexp.QuoteMeta(cidr)),
		regexp.MustCompile(`deployment "web" successfully rolled out`),
		regexp.MustCompile(`pod/private-web condition met`),
		regexp.MustCompile(`web v1: serving /www on :8080`),
		regexp.MustCompile(`GET http://[0-9.]+:8080/ -> .*berth demo: web v1`),
		regexp.MustCompile(`no-secret\s+0/1\s+(ErrImagePull|ImagePullBackOff)`),
		regexp.MustCompile(`deployment.apps/web scaled`),
		regexp.MustCompile(`web\s+5/5\s+5\s+5\s.*registry\.berth\.example/berth/web:v2`),
		regexp.MustCompile(`GET http://[0-9.]+:8080/ -> .*berth demo: web v2`),
		regexp.MustCompile(`deployment.apps "web" deleted`),
		regexp.MustCompile(`containerd \(k8s.io namespace\): no containers, no tasks`),
		regexp.MustCompile(`berth up: stopped`),
		regexp.MustCompile(`==> demo complete`),
	} {
		loc := want.FindStringIndex(rest)
		if loc == nil {
			t.Fatalf("the demo's output lacks /%s/ (or has it out of order):\n%s", want, log)
		}
		rest = rest[loc[1]:]
	}

	// Nothing left: the script removed its work dir (so nothing was
	// mounted under it), no process names it, the bridge is gone.
	if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demo's work dir %s is still there (%v)", work, err)
	}
	if pids := processesMentioning(work); len(pids) > 0 {
		t.Errorf("processes still naming the demo's work dir: %v", pids)
	}
	if _, err := netlink.LinkByName(bridge); err == nil {
		t.Errorf("the demo's pod bridge %s is still there", bridge)
	}
}
