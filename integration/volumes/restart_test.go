package volumes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podMounts is the host's mounts under dir as "id mountpoint fstype"
// lines of /proc/self/mountinfo, sorted: a mount made again gets a new id.
func podMounts(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || (f[4] != dir && !strings.HasPrefix(f[4], dir+"/")) {
			continue
		}
		sep := slices.Index(f, "-")
		if sep < 0 || sep+1 >= len(f) {
			continue
		}
		out = append(out, f[0]+" "+f[4]+" "+f[sep+1])
	}
	slices.Sort(out)
	return out
}

// A restarted agent finds the pod's volumes as they are: the pod keeps
// running with the same containers, its files are intact, nothing is
// mounted again or twice, and updates reach it again afterwards.
func TestAgentRestartKeepsVolumes(t *testing.T) {
	ns := newNamespace(t)
	c := cluster(t)
	apply(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {k: before}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
data: {s: c2VjcmV0} # secret
`)
	pod := runPod(t, ns, `
metadata: {name: survivor}
spec:
  volumes:
  - {name: ram, emptyDir: {medium: Memory, sizeLimit: 8Mi}}
  - {name: disk, emptyDir: {}}
  - {name: cfg, configMap: {name: cfg}}
  - {name: sec, secret: {secretName: sec}}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts:
    - {name: ram, mountPath: /ram}
    - {name: disk, mountPath: /disk}
    - {name: cfg, mountPath: /cfg}
    - {name: sec, mountPath: /sec}
    - {name: cfg, mountPath: /k, subPath: k}
`)
	execIn(t, ns, pod.Name, "c", "sh", "-c", "echo r > /ram/f && echo d > /disk/f")
	dir := podDir(t, pod)
	before := podMounts(t, dir)
	if len(before) != 3 { // ram and sec (tmpfs), the subPath bind; nothing for disk and cfg
		t.Fatalf("before the restart, the pod has mounts %v, want 3", before)
	}
	containerID := pod.Status.ContainerStatuses[0].ContainerID

	restartAgent(t)

	after := podMounts(t, dir)
	if !slices.Equal(before, after) {
		t.Errorf("the pod's mounts changed across the agent's restart:\nbefore %v\nafter  %v", before, after)
	}
	for path, want := range map[string]string{"/ram/f": "r\n", "/disk/f": "d\n", "/cfg/k": "before", "/sec/s": "secret", "/k": "before"} {
		if got := execIn(t, ns, pod.Name, "c", "cat", path); got != want {
			t.Errorf("after the restart %s reads %q, want %q", path, got, want)
		}
	}
	p := getPod(t, ns, pod.Name)
	if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != containerID || cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("the container changed across the agent's restart: %s (was %s)", describe(t, p), containerID)
	}

	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "after"
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, resyncTimeout, "the restarted agent to update the configMap volume", func() (bool, string) {
		out, err := tryExec(t, ns, pod.Name, "c", "cat", "/cfg/k")
		return err == nil && out == "after", out
	})
	if got := podMounts(t, dir); !slices.Equal(before, got) {
		t.Errorf("the pod's mounts changed after the update:\nbefore %v\nafter  %v", before, got)
	}
}

// A pod deleted while the agent is down has its volumes torn down by the
// restarted agent: nothing of it stays mounted or on disk.
func TestPodDeletedWhileAgentDown(t *testing.T) {
	ns := newNamespace(t)
	c := cluster(t)
	apply(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {k: v}
`)
	pod := runPod(t, ns, `
metadata: {name: orphan}
spec:
  volumes:
  - {name: ram, emptyDir: {medium: Memory}}
  - {name: cfg, configMap: {name: cfg}}
  - {name: proj, projected: {sources: [{configMap: {name: cfg}}]}}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts:
    - {name: ram, mountPath: /ram}
    - {name: cfg, mountPath: /k, subPath: k}
    - {name: proj, mountPath: /proj}
`)
	dir := podDir(t, pod)
	if got := len(podMounts(t, dir)); got != 3 {
		t.Fatalf("the pod has %d mounts, want 3 (two tmpfs, one subPath bind)", got)
	}
	restartAgent(t, func() {
		c.MustKubectl(t, "", "delete", "pod", "-n", ns, pod.Name, "--grace-period=0", "--force", "--wait=false")
		waitFor(t, time.Minute, "the pod gone from the API", func() (bool, string) {
			_, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
	waitFor(t, 2*time.Minute, "the deleted pod's volumes unmounted and removed", func() (bool, string) {
		left := podMounts(t, dir)
		_, err := os.Stat(filepath.Join(dir, "volumes"))
		return len(left) == 0 && os.IsNotExist(err), fmt.Sprintf("mounts %v, volumes dir: %v", left, err)
	})
}
