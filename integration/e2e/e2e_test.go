package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
)

// TestAgentJoinsControlPlane is the flow end to end, in steps sharing one
// server and one agent.
func TestAgentJoinsControlPlane(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()

	t.Run("node registers and is Ready with a podCIDR", func(t *testing.T) {
		waitFor(t, 90*time.Second, "node Ready", func() (bool, string) {
			n, err := c.client.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
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
		out := c.mustKubectl(t, "", "get", "node", c.node, "-o", "jsonpath={.spec.podCIDR}")
		if out != c.env.PodCIDR {
			t.Fatalf("node podCIDR %q, want %q (the only CIDR of --cluster-cidr)", out, c.env.PodCIDR)
		}
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
		c.mustKubectl(t, fmt.Sprintf(manifest, c.env.BusyboxImage), "apply", "-f", "-")
		var pod *v1.Pod
		waitFor(t, 90*time.Second, "pod web Running", func() (bool, string) {
			p, err := c.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			pod = p
			return p.Status.Phase == v1.PodRunning && p.Status.PodIP != "", fmt.Sprintf("node=%q phase=%s status=%+v", p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
		})
		uid = string(pod.UID)
		if pod.Spec.NodeName != c.node {
			t.Fatalf("pod bound to %q, want %q", pod.Spec.NodeName, c.node)
		}
		prefix := netip.MustParsePrefix(c.env.PodCIDR)
		if ip := netip.MustParseAddr(pod.Status.PodIP); !prefix.Contains(ip) {
			t.Fatalf("pod IP %s not in the node's podCIDR %s", ip, prefix)
		}
		wide := c.mustKubectl(t, "", "get", "pods", "-o", "wide")
		var line string
		for _, l := range strings.Split(wide, "\n") {
			if strings.HasPrefix(l, "web ") {
				line = l
			}
		}
		for _, want := range []string{"Running", pod.Status.PodIP, c.node, "1/1"} {
			if !strings.Contains(line, want) {
				t.Errorf("kubectl get pods -o wide line %q lacks %q:\n%s", line, want, wide)
			}
		}
	})
	if uid == "" {
		t.FailNow()
	}

	t.Run("kubectl logs through the apiserver", func(t *testing.T) {
		out := c.mustKubectl(t, "", "logs", "web")
		if strings.TrimSpace(out) != "hello-from-e2e" {
			t.Fatalf("kubectl logs = %q, want hello-from-e2e", out)
		}
	})

	t.Run("kubectl exec through the apiserver", func(t *testing.T) {
		out := c.mustKubectl(t, "", "exec", "web", "--", "sh", "-c", "echo $((6*7))")
		if strings.TrimSpace(out) != "42" {
			t.Fatalf("kubectl exec stdout = %q, want 42", out)
		}
		_, _, err := c.kubectl(t, "", "exec", "web", "--", "sh", "-c", "exit 3")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("kubectl exec exit 3: err = %v, want exit code 3", err)
		}
		out = c.mustKubectl(t, "from-stdin\n", "exec", "-i", "web", "--", "cat")
		if out != "from-stdin\n" {
			t.Fatalf("kubectl exec -i cat = %q", out)
		}
	})

	t.Run("pull secret right and wrong", func(t *testing.T) {
		dockerConfig := func(password string) string {
			auth := base64.StdEncoding.EncodeToString([]byte(c.env.AuthUser + ":" + password))
			data, _ := json.Marshal(map[string]any{"auths": map[string]any{c.env.AuthRegistry: map[string]string{"auth": auth}}})
			return string(data)
		}
		for _, s := range []struct{ name, password string }{{"regcred-right", c.env.AuthPassword}, {"regcred-wrong", "not-the-password"}} {
			_, err := c.client.CoreV1().Secrets("default").Create(ctx, &v1.Secret{
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
		c.mustKubectl(t, fmt.Sprintf(pullPod, "pull-right", "regcred-right", c.env.AuthBusyboxImage)+"---\n"+
			fmt.Sprintf(pullPod, "pull-wrong", "regcred-wrong", c.env.AuthBusyboxImage), "apply", "-f", "-")
		waitFor(t, 90*time.Second, "pull-right Running", func() (bool, string) {
			p, err := c.client.CoreV1().Pods("default").Get(ctx, "pull-right", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return p.Status.Phase == v1.PodRunning, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
		seen := map[string]bool{}
		waitFor(t, 90*time.Second, "pull-wrong ErrImagePull then ImagePullBackOff", func() (bool, string) {
			p, err := c.client.CoreV1().Pods("default").Get(ctx, "pull-wrong", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil {
					seen[w.Reason] = true
					if w.Reason == "ErrImagePull" && strings.Contains(w.Message, c.env.AuthPassword) {
						t.Fatalf("the ErrImagePull message shows a password: %q", w.Message)
					}
				}
			}
			return (seen["ErrImagePull"] || seen["ImagePullBackOff"]) && p.Status.Phase == v1.PodPending, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
		c.mustKubectl(t, "", "delete", "pod", "pull-right", "pull-wrong", "--wait=true", "--timeout=60s")
	})

	t.Run("kubectl delete leaves nothing in containerd", func(t *testing.T) {
		c.mustKubectl(t, "", "delete", "pod", "web", "--wait=true", "--timeout=60s")
		if _, err := c.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
			t.Fatal("pod web still in the apiserver after kubectl delete")
		}
		client, err := cri.New(ctx, cri.Config{Endpoint: c.env.Endpoint})
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
	})
}
