package up

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth/integration/harness"
)

// `berth up` SIGKILLed (its containerd gets SIGTERM from the kernel, the
// pods' shims go on) and started again on its data dir is the same
// cluster: the same CA and objects, and the pod it ran is the same pod,
// with the same container, never restarted.
func TestUpKilledAndRestarted(t *testing.T) {
	requirePrerequisites(t)
	harness.RequireKubectl(t)
	bridge, cidr := harness.ClaimSubnet(t, 233, "bkill")
	opts := upOptions{Listen: "127.0.0.1:" + strconv.Itoa(harness.FreePort(t)), Bridge: bridge, PodCIDR: cidr,
		ServiceCIDR: strings.Replace(cidr, "10.233.", "10.234.", 1), HTTPPort: harness.FreePort(t), HTTPSPort: harness.FreePort(t), KubeletPort: harness.FreePort(t)}
	dataDir := shortTempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	up := startUp(t, ctx, dataDir, opts)
	poll(t, ctx, up.exited, "berth up to be ready", func() bool { return strings.Contains(up.stdout.String(), "use: kubectl --kubeconfig") })
	client := upClient(t, up.kubeconfig)
	grace := int64(1)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "survivor", Namespace: "default"}, Spec: v1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers:                    []v1.Container{{Name: "c", Image: "docker.io/berth/busybox:1", Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}},
	}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitReadyPod(t, ctx, up.exited, client, "survivor")
	ca, err := os.ReadFile(filepath.Join(dataDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}

	if err := up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-up.exited
	killed := time.Now()
	up = startUp(t, ctx, dataDir, opts)
	poll(t, ctx, up.exited, "berth up to be ready again", func() bool { return strings.Contains(up.stdout.String(), "use: kubectl --kubeconfig") })
	t.Logf("berth up SIGKILLed and started again: ready after %s", time.Since(killed).Round(time.Millisecond))
	if again, err := os.ReadFile(filepath.Join(dataDir, "ca.crt")); err != nil || !bytes.Equal(again, ca) {
		t.Errorf("the cluster CA changed across the restart (%v)", err)
	}
	client = upClient(t, up.kubeconfig)
	after := waitReadyPod(t, ctx, up.exited, client, "survivor")
	b, a := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
	if after.UID != before.UID || a.ContainerID != b.ContainerID || a.RestartCount != 0 || !a.State.Running.StartedAt.Equal(&b.State.Running.StartedAt) {
		t.Errorf("the pod changed across the restart: uid %s → %s, container %s (started %s) → %s (started %s), restarts %d",
			before.UID, after.UID, b.ContainerID, b.State.Running.StartedAt, a.ContainerID, a.State.Running.StartedAt, a.RestartCount)
	}
}

// upClient is a clientset with the cluster's admin kubeconfig.
func upClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitReadyPod waits until default/name runs with its container ready.
func waitReadyPod(t *testing.T, ctx context.Context, exited <-chan struct{}, client kubernetes.Interface, name string) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	poll(t, ctx, exited, "pod "+name+" running and ready", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		pod = p
		return cs.Ready && cs.State.Running != nil
	})
	return pod
}
