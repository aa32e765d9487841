package faults

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"berth/integration/harness"
)

// serverOutage is how long the apiserver and its etcd stay down.
const serverOutage = 60 * time.Second

// `berth server` (apiserver, embedded etcd, controllers) stopped for a
// minute: the agent leaves its running pods alone, goes on running what
// changes meanwhile (a container exits, another crashes and restarts), and
// once the server is back the pods' status and the events of the outage
// catch up; the node never stops being Ready once it reports again.
func TestServerDownForAMinute(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{})
	ns := newNamespace(t, c)
	defer deletePods(t, c, ns)
	createPods(t, c, ns, "steady", 3, v1.RestartPolicyAlways, sleeper)
	// Finishes, and crashes, during the outage.
	createPods(t, c, ns, "finisher", 1, v1.RestartPolicyNever, "sleep 20; exit 0")
	createCrashOnce(t, c, ns, "crasher-0", 20)
	pods := waitPods(t, c, ns, 5, "every pod running", running)
	before := views(pods)
	rt := runtime(t, c.Env)
	steadyBefore := runningContainers(t, rt, ns)

	if !c.Server.Stop() {
		t.Fatal("berth server did not stop on SIGTERM")
	}
	stopped := time.Now()
	time.Sleep(serverOutage) // the fault itself: nothing to wait for but time
	for _, id := range steadyBefore {
		if !slices.Contains(runningContainers(t, rt, ns), id) && !isFinisherOrCrasher(pods, id) {
			t.Errorf("container %s stopped while the server was down", id)
		}
	}
	restarting := time.Now()
	c.RestartServer(t)
	t.Logf("server down %s", time.Since(stopped).Round(time.Second))

	back := time.Now()
	harness.WaitFor(t, podTimeout, "the finisher Succeeded and the crasher restarted, in the apiserver", func() (bool, string) {
		fin, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), "finisher-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cr, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), "crasher-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		restarts := int32(0)
		if len(cr.Status.ContainerStatuses) > 0 {
			restarts = cr.Status.ContainerStatuses[0].RestartCount
		}
		return fin.Status.Phase == v1.PodSucceeded && restarts == 1, fmt.Sprintf("finisher %s, crasher restarted %d times", fin.Status.Phase, restarts)
	})
	t.Logf("status caught up %s after the server was back", time.Since(back).Round(time.Millisecond))

	// The crasher's one restart happened during the outage; its Started
	// event, counted twice, reached the apiserver once it was back.
	harness.WaitFor(t, podTimeout, "the event of the crasher's restart during the outage", func() (bool, string) {
		evs, err := c.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "crasher-0").String()})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "Started" && e.Count == 2 && e.LastTimestamp.After(stopped) && e.LastTimestamp.Time.Before(restarting) {
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s ×%d at %s", e.Reason, e.Count, e.LastTimestamp.Format(time.TimeOnly)))
		}
		return false, fmt.Sprintf("outage %s–%s; events: %v", stopped.Format(time.TimeOnly), restarting.Format(time.TimeOnly), seen)
	})
	list, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := views(list.Items)
	for _, name := range []string{"steady-0", "steady-1", "steady-2"} {
		if now[name] != before[name] {
			t.Errorf("pod %s: container %+v before the outage, %+v after", name, before[name], now[name])
		}
	}
	if st, msg := nodeReady(t, c); st != v1.ConditionTrue {
		t.Errorf("node %s after the outage: %s", st, msg)
	}
}

// createCrashOnce creates a pod whose container exits 1 after the given
// seconds the first time, and runs until SIGTERM when restarted (a marker
// in an emptyDir remembers the crash).
func createCrashOnce(t *testing.T, c *harness.Cluster, ns, name string, seconds int) {
	t.Helper()
	script := fmt.Sprintf("if [ -f /data/crashed ]; then %s; fi; touch /data/crashed; sleep %d; exit 1", sleeper, seconds)
	grace := int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Volumes:                       []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{Name: "c", Image: c.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", script}, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		},
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// isFinisherOrCrasher reports whether container id belongs to the pods
// expected to stop during the outage.
func isFinisherOrCrasher(pods []v1.Pod, id string) bool {
	for _, p := range pods {
		if p.Name == "finisher-0" || p.Name == "crasher-0" {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.ContainerID == id {
					return true
				}
			}
		}
	}
	return false
}
