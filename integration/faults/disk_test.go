package faults

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

// The agent's root dir full: a new pod's volumes cannot be written, which
// its FailedMount events say ("no space left on device"), while the pods
// already running go on; once space is freed the pod starts, and an agent
// SIGKILLed and started again on that root dir finds nothing corrupt.
func TestAgentRootDirFull(t *testing.T) {
	c := harness.StartServer(t, harness.ServerOptions{})
	c.Env, c.Node = nodeenv.Current(), "e2e-node"
	root := filepath.Join(t.TempDir(), "agent")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatalf("mount a 16 MiB tmpfs as the agent's root dir: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(root, 0); err != nil {
			t.Errorf("unmount %s: %v", root, err)
		}
	})
	cgroupRoot := "/berth-" + c.Env.BridgeName
	c.Agent, c.KubeletPort = c.StartAgent(t, c.Env, c.Node, root, cgroupRoot)
	ns := newNamespace(t, c)
	defer deletePods(t, c, ns)
	createPods(t, c, ns, "before", 1, v1.RestartPolicyAlways, sleeper)
	before := views(waitPods(t, c, ns, 1, "the first pod running", running))

	filler := filepath.Join(root, "filler")
	fill(t, filler)
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"key": strings.Repeat("x", 64<<10)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	blocked := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "blocked"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}},
			Containers: []v1.Container{{Name: "c", Image: c.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", sleeper}, VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}}},
		},
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), blocked, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, podTimeout, "a FailedMount event saying the disk is full", func() (bool, string) {
		evs, err := c.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "blocked").String()})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "FailedMount" && strings.Contains(e.Message, "no space left on device") {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})
	p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), "blocked", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending {
		t.Errorf("pod with unwritable volumes is %s, want Pending", p.Status.Phase)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, ns, 2, "both pods running once space is freed", running)
	if got, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), "before-0", metav1.GetOptions{}); err != nil || views([]v1.Pod{*got})["before-0"] != before["before-0"] {
		t.Errorf("the running pod changed while the disk was full: %+v, want %+v (%v)", got.Status.ContainerStatuses, before["before-0"], err)
	}

	// Nothing the agent keeps in its root dir was left corrupt: killed
	// and started again, it adopts both pods without a new container.
	list, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := views(list.Items)
	c.Agent.Kill()
	c.Agent, c.KubeletPort = c.StartAgent(t, c.Env, c.Node, root, cgroupRoot)
	createPods(t, c, ns, "after", 1, v1.RestartPolicyAlways, sleeper)
	list2 := waitPods(t, c, ns, 3, "every pod running after the agent's restart", running)
	compareViews(t, all, views(list2))
}

// fill writes zeros to path until its filesystem is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatalf("filling %s: %v", path, err)
		}
	}
}
