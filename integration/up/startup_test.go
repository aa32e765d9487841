package up

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/syncbuf"
	"berth/internal/testimages"
)

// upOptions is what differs between the tests' `berth up` runs.
type upOptions struct {
	// Listen is the apiserver's --listen address.
	Listen string
	// Bridge, PodCIDR and ServiceCIDR are the cluster's networks, of the
	// test's own (agents of clusters tested in parallel program their
	// proxies in the same host network namespace).
	Bridge, PodCIDR, ServiceCIDR string
	// HTTPPort and HTTPSPort are the ingress controller's ports (kept off
	// the machine's :80 and :443).
	HTTPPort, HTTPSPort int
	// KubeletPort is the agent API's port; 0 picks a free one.
	KubeletPort int
}

// upProcess is a running `berth up`.
type upProcess struct {
	cmd            *exec.Cmd
	stdout, stderr syncbuf.Buffer
	// exited is closed when the process has ended.
	exited chan struct{}
	// kubeconfig is the admin kubeconfig in the data dir.
	kubeconfig string
}

// startUp runs `berth up` on dataDir with a registry standing in for
// docker.io (busybox as docker.io/berth/busybox:1), reached only through
// the registries file's mirror, and loopback as the node's resolver (the
// host's own may be off the machine). When the test ends, a process still
// running is stopped as a user would (SIGTERM, so it removes its pods and
// stops its containerd; killed only if it hangs for a minute) and, if the
// test failed, its output logged.
func startUp(t *testing.T, ctx context.Context, dataDir string, opts upOptions) *upProcess {
	t.Helper()
	berth, pause := binaries(t)
	busybox, err := testimages.BusyboxImage(nodeenv.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	mirror, err := testimages.StartRegistry(testimages.RegistryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mirror.Close() })
	if _, err := mirror.Push(ctx, "berth/busybox:1", busybox); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	resolvConf, registries := filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "registries.yaml")
	if err := os.WriteFile(resolvConf, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(registries, []byte(fmt.Sprintf("mirrors:\n  docker.io:\n    endpoint:\n      - \"http://%s\"\n", mirror.Host())), 0o600); err != nil {
		t.Fatal(err)
	}

	if opts.KubeletPort == 0 {
		opts.KubeletPort = harness.FreePort(t)
	}
	p := &upProcess{exited: make(chan struct{}), kubeconfig: filepath.Join(dataDir, "admin.kubeconfig")}
	p.cmd = exec.Command(berth, "up",
		"--data-dir", dataDir, "--listen", opts.Listen,
		"--cni-bridge", opts.Bridge, "--pod-cidr", opts.PodCIDR, "--service-cluster-ip-range", opts.ServiceCIDR, "--read-only-port", "0",
		"--kubelet-port", strconv.Itoa(opts.KubeletPort), "--registries", registries, "--pause-binary", pause, "--resolv-conf", resolvConf,
		"--ingress-http-port", strconv.Itoa(opts.HTTPPort), "--ingress-https-port", strconv.Itoa(opts.HTTPSPort))
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(time.Minute):
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		if t.Failed() {
			t.Logf("berth up stdout:\n%s\nstderr (last 80 lines):\n%s", p.stdout.String(), lastLines(p.stderr.String(), 80))
		}
	})
	return p
}
