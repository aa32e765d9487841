package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"berth/integration/harness"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLogsPortForwardAndNodeReadiness drives, through real kubectl and the
// apiserver, `kubectl logs --previous` after a crash, `kubectl logs -f` of a
// line written after the command started, `kubectl port-forward` to a
// busybox httpd, and the Node's Ready condition following the runtime's
// NetworkReady as the CNI config disappears and comes back.
func TestLogsPortForwardAndNodeReadiness(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{})
	ctx := context.Background()
	waitNodeReady(t, c, v1.ConditionTrue)

	const pods = `apiVersion: v1
kind: Pod
metadata:
  name: crasher
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Always
  containers:
  - name: main
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo crashed-with-exit-1; exit 1"]
---
apiVersion: v1
kind: Pod
metadata:
  name: follower
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo follow-start; while [ ! -f /tmp/go ]; do sleep 0.2; done; echo after-follow-started; exec sleep 3600"]
---
apiVersion: v1
kind: Pod
metadata:
  name: httpd
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo served-through-port-forward > /www/index.html && exec httpd -f -p 8080 -h /www"]
`
	c.MustKubectl(t, fmt.Sprintf(pods, c.Env.BusyboxImage), "apply", "-f", "-")
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "pod", "crasher", "follower", "httpd", "--wait=true", "--timeout=60s")
	})

	t.Run("kubectl logs --previous after a crash", func(t *testing.T) {
		c.WaitPod(t, "crasher", 60*time.Second, "crasher restarted", func(p *v1.Pod) (bool, string) {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil {
					if code := cs.LastTerminationState.Terminated.ExitCode; code != 1 {
						t.Fatalf("last termination exit code %d, want 1", code)
					}
					return true, ""
				}
			}
			return false, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
		out := c.MustKubectl(t, "", "logs", "crasher", "--previous")
		if strings.TrimSpace(out) != "crashed-with-exit-1" {
			t.Fatalf("kubectl logs --previous = %q, want crashed-with-exit-1", out)
		}
		// The crash loop's back-off is recorded as the kubelet records it.
		c.WaitPod(t, "crasher", 60*time.Second, "the crasher's BackOff event", func(p *v1.Pod) (bool, string) {
			want := fmt.Sprintf("Back-off restarting failed container main in pod crasher_default(%s)", p.UID)
			evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, e := range evs.Items {
				if e.InvolvedObject.UID == p.UID && e.Source.Component == "kubelet" {
					if e.Type == v1.EventTypeWarning && e.Reason == "BackOff" && e.Message == want &&
						e.InvolvedObject.FieldPath == "spec.containers{main}" {
						return true, ""
					}
					got = append(got, e.Type+" "+e.Reason+" "+e.Message)
				}
			}
			return false, fmt.Sprintf("no Warning BackOff %q in %q", want, got)
		})
	})

	t.Run("kubectl logs -f streams a line written after it started", func(t *testing.T) {
		waitPodRunning(t, c, "follower")
		lines, stderr := c.StreamKubectl(t, 60*time.Second, "logs", "-f", "follower")
		if !lines.Scan() || lines.Text() != "follow-start" {
			t.Fatalf("first followed line %q (%v), want follow-start; stderr: %s", lines.Text(), lines.Err(), stderr.String())
		}
		// The next line is only written once this exec runs, after
		// kubectl logs -f has already returned the first one.
		c.MustKubectl(t, "", "exec", "follower", "--", "touch", "/tmp/go")
		if !lines.Scan() || lines.Text() != "after-follow-started" {
			t.Fatalf("second followed line %q (%v), want after-follow-started; stderr: %s", lines.Text(), lines.Err(), stderr.String())
		}
	})

	t.Run("kubectl port-forward to a busybox httpd", func(t *testing.T) {
		waitPodRunning(t, c, "httpd")
		lines, stderr := c.StreamKubectl(t, 60*time.Second, "port-forward", "--address", "127.0.0.1", "pod/httpd", ":8080")
		forwarding := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
		var port string
		for port == "" && lines.Scan() {
			if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
				port = m[1]
			}
		}
		if port == "" {
			t.Fatalf("kubectl port-forward printed no forwarding line (%v); stderr: %s", lines.Err(), stderr.String())
		}
		go func() {
			for lines.Scan() { // drain what kubectl prints per connection
			}
		}()
		httpc := &http.Client{Timeout: 10 * time.Second}
		harness.WaitFor(t, 30*time.Second, "GET through the forwarded port", func() (bool, string) {
			resp, err := httpc.Get("http://127.0.0.1:" + port + "/index.html")
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return false, err.Error()
			}
			if resp.StatusCode != http.StatusOK || string(body) != "served-through-port-forward\n" {
				t.Fatalf("GET through port-forward = %d %q, want 200 served-through-port-forward", resp.StatusCode, body)
			}
			return true, ""
		})
	})

	t.Run("node NotReady while the runtime network is not ready", func(t *testing.T) {
		confs, err := filepath.Glob(filepath.Join(c.Env.CNIConfDir, "*.conflist"))
		if err != nil || len(confs) == 0 {
			t.Fatalf("no CNI conflist in %s (%v)", c.Env.CNIConfDir, err)
		}
		aside := t.TempDir()
		restore := func() {
			for _, f := range confs {
				if _, err := os.Stat(f); err == nil {
					continue
				}
				data, err := os.ReadFile(filepath.Join(aside, filepath.Base(f)))
				if err != nil {
					t.Error(err)
					continue
				}
				if err := os.WriteFile(f, data, 0o644); err != nil {
					t.Error(err)
				}
			}
		}
		t.Cleanup(restore)
		for _, f := range confs {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(aside, filepath.Base(f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		n := waitNodeReady(t, c, v1.ConditionFalse)
		if n.Reason != "KubeletNotReady" || !strings.Contains(n.Message, "container runtime network not ready: NetworkReady=false") {
			t.Fatalf("NotReady condition reason %q message %q, want KubeletNotReady and the runtime's NetworkReady=false", n.Reason, n.Message)
		}
		restore()
		if n := waitNodeReady(t, c, v1.ConditionTrue); n.Reason != "KubeletReady" {
			t.Fatalf("Ready condition reason %q, want KubeletReady", n.Reason)
		}
	})
}

// waitNodeReady waits up to 60 s until the cluster's Node has its Ready
// condition at status and returns that condition.
func waitNodeReady(t *testing.T, c *harness.Cluster, status v1.ConditionStatus) v1.NodeCondition {
	t.Helper()
	return waitReadyCondition(t, c, status, 60*time.Second)
}

// waitPodRunning waits until pod name in namespace default is Running.
func waitPodRunning(t *testing.T, c *harness.Cluster, name string) {
	t.Helper()
	c.WaitPod(t, name, 60*time.Second, "pod "+name+" Running", func(p *v1.Pod) (bool, string) {
		return p.Status.Phase == v1.PodRunning, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
}
