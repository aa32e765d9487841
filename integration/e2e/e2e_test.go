package e2e

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/bootstrap"
	"berth/cri"
	"berth/integration/harness"
)

// TestAgentJoinsControlPlane is the flow end to end, in steps sharing one
// server and one agent.
func TestAgentJoinsControlPlane(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{})
	ctx := context.Background()

	t.Run("node registers and is Ready with a podCIDR", func(t *testing.T) {
		harness.WaitFor(t, 90*time.Second, "node Ready", func() (bool, string) {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == v1.NodeReady {
					return cond.Status == v1.ConditionTrue && n.Spec.PodCIDR != "", fmt.Sprintf("%s %s: %s podCIDR=%q", cond.Status, cond.Reason, cond.Message, n.Spec.PodCIDR)
				}
			}
			return false, "no Ready condition"
		})
		out := c.MustKubectl(t, "", "get", "node", c.Node, "-o", "jsonpath={.spec.podCIDR}")
		if out != c.Env.PodCIDR {
			t.Fatalf("node podCIDR %q, want %q (the only CIDR of --cluster-cidr)", out, c.Env.PodCIDR)
		}
	})

	t.Run("node credential from the CSR API when served", func(t *testing.T) {
		if !bootstrap.ServesCSRs(c.Client) {
			if !strings.Contains(c.Agent.Log(), "keeping the join token") {
				t.Fatal("the apiserver serves no CSR API, and the agent does not say it keeps the join token")
			}
			t.Log("the apiserver serves no CSR API: the agent keeps the join token")
			return
		}
		harness.WaitFor(t, 30*time.Second, "the agent to authenticate with its node client certificate", func() (bool, string) {
			return strings.Contains(c.Agent.Log(), "authenticating with the node client certificate"), ""
		})
		harness.WaitFor(t, 60*time.Second, "issued kubelet client and serving CSRs", func() (bool, string) {
			csrs, err := c.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			signers := map[string]bool{}
			for _, r := range csrs.Items {
				if len(r.Status.Certificate) > 0 && r.Spec.Username != "" {
					signers[r.Spec.SignerName] = true
				}
			}
			return signers["kubernetes.io/kube-apiserver-client-kubelet"] && signers["kubernetes.io/kubelet-serving"], fmt.Sprint(signers)
		})
	})

	const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo hello-from-e2e; trap 'exit 0' TERM; while true; do sleep 1; done"]
`
	var uid string
	t.Run("applied pod is scheduled and Running with an IP from the podCIDR", func(t *testing.T) {
		c.MustKubectl(t, fmt.Sprintf(manifest, c.Env.BusyboxImage), "apply", "-f", "-")
		var pod *v1.Pod
		c.WaitPod(t, "web", 90*time.Second, "pod web Running", func(p *v1.Pod) (bool, string) {
			pod = p
			return p.Status.Phase == v1.PodRunning && p.Status.PodIP != "", fmt.Sprintf("node=%q phase=%s status=%+v", p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
		})
		uid = string(pod.UID)
		if pod.Spec.NodeName != c.Node {
			t.Fatalf("pod bound to %q, want %q", pod.Spec.NodeName, c.Node)
		}
		prefix := netip.MustParsePrefix(c.Env.PodCIDR)
		if ip := netip.MustParseAddr(pod.Status.PodIP); !prefix.Contains(ip) {
			t.Fatalf("pod IP %s not in the node's podCIDR %s", ip, prefix)
		}
		wide := c.MustKubectl(t, "", "get", "pods", "-o", "wide")
		var line string
		for _, l := range strings.Split(wide, "\n") {
			if strings.HasPrefix(l, "web ") {
				line = l
			}
		}
		for _, want := range []string{"Running", pod.Status.PodIP, c.Node, "1/1"} {
			if !strings.Contains(line, want) {
				t.Errorf("kubectl get pods -o wide line %q lacks %q:\n%s", line, want, wide)
			}
		}
	})
	if uid == "" {
		t.FailNow()
	}

	// reasons lists the reasons of the kubelet's Events on pod uid.
	reasons := func(uid string) map[string]bool {
		evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, e := range evs.Items {
			if string(e.InvolvedObject.UID) == uid && e.Source.Component == "kubelet" {
				out[e.Reason] = true
			}
		}
		return out
	}
	t.Run("the agent records the kubelet's events", func(t *testing.T) {
		harness.WaitFor(t, 30*time.Second, "Created and Started events", func() (bool, string) {
			r := reasons(uid)
			return r["Created"] && r["Started"], fmt.Sprint(r)
		})
	})

	t.Run("kubectl logs through the apiserver", func(t *testing.T) {
		out := c.MustKubectl(t, "", "logs", "web")
		if strings.TrimSpace(out) != "hello-from-e2e" {
			t.Fatalf("kubectl logs = %q, want hello-from-e2e", out)
		}
	})

	t.Run("kubectl exec through the apiserver", func(t *testing.T) {
		out := c.MustKubectl(t, "", "exec", "web", "--", "sh", "-c", "echo $((6*7))")
		if strings.TrimSpace(out) != "42" {
			t.Fatalf("kubectl exec stdout = %q, want 42", out)
		}
		_, _, err := c.Kubectl(t, "", "exec", "web", "--", "sh", "-c", "exit 3")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("kubectl exec exit 3: err = %v, want exit code 3", err)
		}
		out = c.MustKubectl(t, "from-stdin\n", "exec", "-i", "web", "--", "cat")
		if out != "from-stdin\n" {
			t.Fatalf("kubectl exec -i cat = %q", out)
		}
	})

	t.Run("pull secret right, wrong and missing", func(t *testing.T) {
		dockerConfig := func(password string) string {
			auth := base64.StdEncoding.EncodeToString([]byte(c.Env.AuthUser + ":" + password))
			data, _ := json.Marshal(map[string]any{"auths": map[string]any{c.Env.AuthRegistry: map[string]string{"auth": auth}}})
			return string(data)
		}
		for _, s := range []struct{ name, password string }{{"regcred-right", c.Env.AuthPassword}, {"regcred-wrong", "not-the-password"}} {
			_, err := c.Client.CoreV1().Secrets("default").Create(ctx, &v1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: s.name}, Type: v1.SecretTypeDockerConfigJson,
				Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(dockerConfig(s.password))},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		const pullPod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  imagePullSecrets: [{name: %s}]
  containers:
  - name: main
    image: %s
    imagePullPolicy: Always
    command: ["sleep", "3600"]
`
		c.MustKubectl(t, fmt.Sprintf(pullPod, "pull-right", "regcred-right", c.Env.AuthBusyboxImage)+"---\n"+
			fmt.Sprintf(pullPod, "pull-wrong", "regcred-wrong", c.Env.AuthBusyboxImage)+"---\n"+
			fmt.Sprintf(pullPod, "pull-missing", "regcred-absent", c.Env.AuthBusyboxImage), "apply", "-f", "-")
		c.WaitPod(t, "pull-right", 90*time.Second, "pull-right Running", func(p *v1.Pod) (bool, string) {
			return p.Status.Phase == v1.PodRunning, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
		for _, name := range []string{"pull-wrong", "pull-missing"} {
			seen := map[string]bool{}
			c.WaitPod(t, name, 90*time.Second, name+" ErrImagePull or ImagePullBackOff", func(p *v1.Pod) (bool, string) {
				for _, cs := range p.Status.ContainerStatuses {
					if w := cs.State.Waiting; w != nil {
						seen[w.Reason] = true
						if w.Reason == "ErrImagePull" && strings.Contains(w.Message, c.Env.AuthPassword) {
							t.Fatalf("the ErrImagePull message shows a password: %q", w.Message)
						}
					}
				}
				return (seen["ErrImagePull"] || seen["ImagePullBackOff"]) && p.Status.Phase == v1.PodPending, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
			})
		}
		// The kubelet's events for a failing pull: the pull's failure, the
		// container's "Error: <reason>", the pull back-off.
		want := []string{
			"Warning Failed Failed to pull image " + strconv.Quote(c.Env.AuthBusyboxImage) + ": ",
			"Warning Failed Error: ErrImagePull",
			"Normal BackOff Back-off pulling image " + strconv.Quote(c.Env.AuthBusyboxImage),
			"Warning Failed Error: ImagePullBackOff",
		}
		harness.WaitFor(t, 60*time.Second, "pull-wrong's failure events", func() (bool, string) {
			evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, e := range evs.Items {
				if e.InvolvedObject.Name == "pull-wrong" && e.Source.Component == "kubelet" {
					got = append(got, e.Type+" "+e.Reason+" "+e.Message)
				}
			}
			for _, w := range want {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
					return false, fmt.Sprintf("no %q in %q", w, got)
				}
			}
			return true, ""
		})
		evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, c.Env.AuthPassword) || strings.Contains(e.Message, base64.StdEncoding.EncodeToString([]byte(c.Env.AuthUser+":"+c.Env.AuthPassword))) {
				t.Errorf("event %s %s shows the registry password: %q", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		c.MustKubectl(t, "", "delete", "pod", "pull-right", "pull-wrong", "pull-missing", "--wait=true", "--timeout=60s")
	})

	t.Run("the agent API refuses anonymous requests", func(t *testing.T) {
		insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := insecure.Get(fmt.Sprintf("https://127.0.0.1:%d/pods", c.KubeletPort))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous GET /pods = %d, want 401", resp.StatusCode)
		}
	})

	t.Run("static pod gets a mirror pod with its status", func(t *testing.T) {
		static := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: default
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, c.Env.BusyboxImage)
		file := filepath.Join(c.Manifests, "static-web.yaml")
		if err := os.WriteFile(file, []byte(static), 0o644); err != nil {
			t.Fatal(err)
		}
		name := "static-web-" + c.Node
		c.WaitPod(t, name, 60*time.Second, "mirror pod Running", func(p *v1.Pod) (bool, string) {
			_, mirror := p.Annotations["kubernetes.io/config.mirror"]
			return mirror && p.Spec.NodeName == c.Node && p.Status.Phase == v1.PodRunning, fmt.Sprintf("annotations=%v phase=%s", p.Annotations, p.Status.Phase)
		})
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 60*time.Second, "mirror pod deleted", func() (bool, string) {
			_, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err != nil, fmt.Sprint(err)
		})
	})

	t.Run("readiness gates hold Ready until their conditions are True", func(t *testing.T) {
		grace := int64(5)
		gated := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: "default"},
			Spec: v1.PodSpec{
				// Graceful: kubectl delete --wait returns once the agent is done.
				TerminationGracePeriodSeconds: &grace,
				ReadinessGates:                []v1.PodReadinessGate{{ConditionType: "k8s.io/test-condition1"}, {ConditionType: "k8s.io/test-condition2"}},
				Containers: []v1.Container{{Name: "main", Image: c.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}},
			},
		}
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, gated, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { // gone, volumes unmounted, before the cluster stops
			c.MustKubectl(t, "", "delete", "pod", "gated", "--wait=true", "--timeout=60s")
		}()
		ready := func(status v1.ConditionStatus, reason string) {
			t.Helper()
			c.WaitPod(t, "gated", 60*time.Second, fmt.Sprintf("Ready %s %s", status, reason), func(p *v1.Pod) (bool, string) {
				for _, cond := range p.Status.Conditions {
					if cond.Type == v1.PodReady {
						return p.Status.Phase == v1.PodRunning && cond.Status == status && cond.Reason == reason, fmt.Sprintf("%s %+v", p.Status.Phase, cond)
					}
				}
				return false, fmt.Sprintf("%s, no Ready condition", p.Status.Phase)
			})
		}
		// As upstream's e2e spec sets them: a strategic merge patch of the status.
		set := func(typ string, status v1.ConditionStatus) {
			t.Helper()
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, typ, status)
			if _, err := c.Client.CoreV1().Pods("default").Patch(ctx, "gated", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
				t.Fatal(err)
			}
		}
		ready(v1.ConditionFalse, "ReadinessGatesNotReady")
		set("k8s.io/test-condition1", v1.ConditionTrue)
		ready(v1.ConditionFalse, "ReadinessGatesNotReady")
		set("k8s.io/test-condition2", v1.ConditionTrue)
		ready(v1.ConditionTrue, "")
		set("k8s.io/test-condition1", v1.ConditionFalse)
		ready(v1.ConditionFalse, "ReadinessGatesNotReady")
	})

	t.Run("kubectl delete leaves nothing in containerd", func(t *testing.T) {
		c.MustKubectl(t, "", "delete", "pod", "web", "--wait=true", "--timeout=60s")
		if _, err := c.Client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
			t.Fatal("pod web still in the apiserver after kubectl delete")
		}
		client, err := cri.New(ctx, cri.Config{Endpoint: c.Env.Endpoint})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		sel := map[string]string{cri.LabelPodUID: uid}
		sandboxes, err := client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		containers, err := client.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(sandboxes) != 0 || len(containers) != 0 {
			t.Fatalf("after delete, containerd holds %d sandboxes and %d containers of pod %s", len(sandboxes), len(containers), uid)
		}
		harness.WaitFor(t, 30*time.Second, "a Killing event", func() (bool, string) {
			r := reasons(uid)
			return r["Killing"], fmt.Sprint(r)
		})
	})
}
