package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

// TestServiceTrafficSurvivesAgentRestart: with --proxy-cleanup-on-exit=false
// (the agent's default, kube-proxy's way) the service proxy's table stays in
// the kernel while the agent is down, so a Service's ClusterIP keeps
// answering, and the restarted agent resyncs the same table in place (its
// handle does not change) and programs what changed meanwhile.
func TestServiceTrafficSurvivesAgentRestart(t *testing.T) {
	env := nodeenv.Current()
	serviceCIDR := strings.Replace(env.PodCIDR, "10.222.", "10.226.", 1) // a range of its own: the host's tables are shared
	c := harness.StartCluster(t, harness.ClusterOptions{
		ServerArgs: []string{"--service-cluster-ip-range", serviceCIDR},
		AgentArgs:  []string{"--proxy-cleanup-on-exit=false"},
	})
	table := "berth-proxy-" + env.BridgeName
	agents := []*harness.Proc{c.Agent}
	t.Cleanup(func() {
		for _, a := range agents {
			a.Stop()
		}
		// The agent leaves its egress masquerading table too.
		for _, tbl := range []string{table, "berth-egress-" + env.BridgeName} {
			if out, err := exec.Command("nft", "delete", "table", "ip", tbl).CombinedOutput(); err != nil {
				t.Errorf("deleting the table the agent left: %v: %s", err, out)
			}
		}
	})
	ctx := context.Background()
	waitNodeReady(t, c, "True")

	const objects = `apiVersion: v1
kind: Pod
metadata:
  name: restart-web
  labels: {app: restart-web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: %[2]s}
spec:
  selector: {app: restart-web}
  ports: [{name: http, port: 80, targetPort: http}]
`
	c.MustKubectl(t, fmt.Sprintf(objects, env.BusyboxImage, "restart-web"), "apply", "-f", "-")
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "pod/restart-web", "service/restart-web", "service/restart-web-2", "--wait=true", "--timeout=60s")
	})
	waitPodRunning(t, c, "restart-web")
	clusterIP := func(name string) string {
		svc, err := c.Client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return svc.Spec.ClusterIP
	}
	handleRE := regexp.MustCompile(`table ip ` + regexp.QuoteMeta(table) + ` \{ # handle (\d+)`)
	// handle is the table's kernel handle; "" when it is not there. A
	// request to a ClusterIP is only sent while the table is there: without
	// it the packet would follow the host's default route.
	handle := func() string {
		out, _ := exec.Command("nft", "-a", "list", "table", "ip", table).CombinedOutput()
		if m := handleRE.FindStringSubmatch(string(out)); m != nil {
			return m[1]
		}
		return ""
	}
	get := func(ip string) (string, error) {
		if handle() == "" {
			return "", fmt.Errorf("table %s is not in the kernel", table)
		}
		hc := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := hc.Get("http://" + net.JoinHostPort(ip, "80") + "/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	reaches := func(what, ip string) {
		t.Helper()
		harness.WaitFor(t, 60*time.Second, what, func() (bool, string) {
			body, err := get(ip)
			return err == nil && body == "hello-from-web\n", fmt.Sprintf("%q %v", body, err)
		})
	}
	webIP := clusterIP("restart-web")
	reaches("the ClusterIP to answer from the host", webIP)
	before := handle()

	// The agent stops: the table stays, the Service keeps answering.
	if !c.Agent.Stop() {
		t.Fatal("the agent did not stop cleanly")
	}
	if got := handle(); got != before {
		t.Fatalf("table handle %q after the agent stopped, want %q (kept as it was)", got, before)
	}
	for range 5 {
		if body, err := get(webIP); err != nil || body != "hello-from-web\n" {
			t.Fatalf("the ClusterIP while the agent is down: %q %v", body, err)
		}
	}

	// What changes meanwhile is programmed by the restarted agent, into
	// the same table.
	c.MustKubectl(t, fmt.Sprintf(objects, env.BusyboxImage, "restart-web-2"), "apply", "-f", "-")
	agent, _ := c.StartAgent(t, env, c.Node, c.AgentRootDir, "/berth-"+env.BridgeName,
		"--pod-manifest-path", c.Manifests, "--manifest-rescan", "2s", "--proxy-cleanup-on-exit=false")
	agents = append(agents, agent)
	reaches("the Service created while the agent was down to answer after its restart", clusterIP("restart-web-2"))
	if body, err := get(webIP); err != nil || body != "hello-from-web\n" {
		t.Errorf("the first Service after the restart: %q %v", body, err)
	}
	if got := handle(); got != before {
		t.Errorf("table handle %q after the restart, want %q (resynced in place, not recreated)", got, before)
	}
	// While an agent runs to tear the pod down (the cleanups stop it first).
	c.MustKubectl(t, "", "delete", "pod/restart-web", "service/restart-web", "service/restart-web-2", "--wait=true", "--timeout=60s")
}
