package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

// podTimeout bounds waiting for pods to start or for status to catch up.
const podTimeout = 3 * time.Minute

// newNamespace creates a namespace named after the test.
func newNamespace(t *testing.T, c *harness.Cluster) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	if _, err := c.Client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// deletePods deletes the namespace's pods (gracefully: the agent removes
// each from the apiserver once its containers and volumes are gone) and
// waits until they are gone; tests defer it, so that it runs while the
// (possibly restarted) agent still does, before the cleanups stop the
// processes.
func deletePods(t *testing.T, c *harness.Cluster, ns string) {
	t.Helper()
	pods := c.Client.CoreV1().Pods(ns)
	if err := pods.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("deleting the pods of %s: %v", ns, err)
		return
	}
	harness.WaitFor(t, podTimeout, "the pods of "+ns+" removed", func() (bool, string) {
		list, err := pods.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d pods left", len(list.Items))
	})
}

// createPods creates n pods name-0 … name-(n-1) of one busybox container
// running script, bound to the cluster's node by the scheduler.
func createPods(t *testing.T, c *harness.Cluster, ns, name string, n int, restart v1.RestartPolicy, script string) {
	t.Helper()
	grace := int64(1)
	for i := range n {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i)},
			Spec: v1.PodSpec{
				RestartPolicy:                 restart,
				TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{
					Name: "c", Image: c.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"sh", "-c", script},
				}},
			},
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// sleeper runs until SIGTERM.
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done"

// waitPods waits until cond holds for every pod of the namespace (and there
// are want of them), and returns them.
func waitPods(t *testing.T, c *harness.Cluster, ns string, want int, what string, cond func(*v1.Pod) bool) []v1.Pod {
	t.Helper()
	var pods []v1.Pod
	harness.WaitFor(t, podTimeout, what, func() (bool, string) {
		list, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods = list.Items
		var notYet []string
		for i := range pods {
			if !cond(&pods[i]) {
				notYet = append(notYet, pods[i].Name+" "+string(pods[i].Status.Phase))
			}
		}
		if len(pods) != want || len(notYet) > 0 {
			return false, fmt.Sprintf("%d pods of %d; not yet: %v", len(pods), want, notYet)
		}
		return true, ""
	})
	return pods
}

// running reports whether the pod runs with every container started.
func running(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || !cs.Ready {
			return false
		}
	}
	return true
}

// containerView is what must not change about a running pod's container.
type containerView struct {
	ID       string
	Started  time.Time
	Restarts int32
}

// views is each pod's container as its status shows it, by pod name.
func views(pods []v1.Pod) map[string]containerView {
	m := map[string]containerView{}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			v := containerView{ID: cs.ContainerID, Restarts: cs.RestartCount}
			if cs.State.Running != nil {
				v.Started = cs.State.Running.StartedAt.Time
			}
			m[p.Name] = v
		}
	}
	return m
}

// compareViews reports every pod whose container changed.
func compareViews(t *testing.T, before, after map[string]containerView) {
	t.Helper()
	for name, b := range before {
		if a, ok := after[name]; !ok || a != b {
			t.Errorf("pod %s: container %+v before the fault, %+v after", name, b, a)
		}
	}
}

// runtime is a CRI client of the package's containerd.
func runtime(t *testing.T, env *nodeenv.Env) runtimeapi.RuntimeServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(env.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// runningContainers lists the IDs ("containerd://…", as pod status shows
// them) of the runtime's running containers of pods in namespace ns.
func runningContainers(t *testing.T, rt runtimeapi.RuntimeServiceClient, ns string) []string {
	t.Helper()
	resp, err := rt.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": ns},
	}})
	if err != nil {
		t.Fatalf("CRI ListContainers: %v", err)
	}
	var ids []string
	for _, c := range resp.GetContainers() {
		ids = append(ids, "containerd://"+c.GetId())
	}
	slices.Sort(ids)
	return ids
}

// nodeReady is the status of the node's Ready condition and its message.
func nodeReady(t *testing.T, c *harness.Cluster) (v1.ConditionStatus, string) {
	t.Helper()
	n, err := c.Client.CoreV1().Nodes().Get(context.Background(), c.Node, metav1.GetOptions{})
	if err != nil {
		return "", err.Error()
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.Status, cond.Message
		}
	}
	return "", "no Ready condition"
}

// agentMetrics reads the counters and histogram counts of the agent's
// /metrics, fetched with the admin's credentials: family name → summed
// value (a histogram's sample count) of the series whose labels include
// match.
func agentMetrics(t *testing.T, cfg *rest.Config, port int, match map[string]string) map[string]float64 {
	t.Helper()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.InsecureSkipVerify = true // the agent's serving certificate is not what is tested
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 10 * time.Second}
	resp, err := client.Get("https://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
	if err != nil {
		t.Fatalf("agent /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("agent /metrics: %s %v", resp.Status, err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("agent /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			ok := true
			for k, v := range match {
				if _, has := labels[k]; has && labels[k] != v {
					ok = false
				}
			}
			if ok {
				out[name] += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
