package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The container spec reaches the runtime as the kubelet maps it: env with
// $(VAR) expansion, workingDir, runAsUser, and resources as CPU shares,
// CFS quota and memory limit in the pod's Burstable cgroup.
func TestContainerSpecReachesTheRuntime(t *testing.T) {
	n := newNode(t)
	n.start()
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: spec
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ` + n.env.BusyboxImage + `
    command: ["sh", "-c"]
    args: ["echo \"$(GREETING) uid=$(id -u) gid=$(id -g) pwd=$(pwd)\" > /dev/termination-log; sleep 3"]
    workingDir: /tmp
    env:
    - name: NAME
      value: world
    - name: GREETING
      value: hello $(NAME)
    securityContext:
      runAsUser: 1234
      runAsGroup: 5678
    resources:
      requests:
        cpu: 250m
      limits:
        cpu: 500m
        memory: 64Mi
`
	n.write("spec.yaml", manifest)
	p := n.waitPod("spec-n1", "Running", time.Minute, running)
	if p.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("qosClass %s, want Burstable", p.Status.QOSClass)
	}
	id := strings.TrimPrefix(containerStatus(p, "app").ContainerID, "containerd://")
	podCgroup := filepath.Join(n.cgroupRoot, "kubepods", "burstable", "pod"+string(p.UID))
	for file, want := range map[string]string{
		"cpu/" + podCgroup + "/" + id + "/cpu.shares":               "256",
		"cpu/" + podCgroup + "/" + id + "/cpu.cfs_quota_us":         "50000",
		"memory/" + podCgroup + "/" + id + "/memory.limit_in_bytes": "67108864",
	} {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", file))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
	p = n.waitPod("spec-n1", "Succeeded", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	term := containerStatus(p, "app").State.Terminated
	if want := "hello world uid=1234 gid=5678 pwd=/tmp\n"; term == nil || term.Message != want {
		t.Fatalf("termination message %+v, want %q", containerStatus(p, "app").State, want)
	}
	n.removeAllAndWait()
}

// runAsNonRoot with an image that runs as root is refused before the
// container is created: CreateContainerConfigError, as upstream.
func TestRunAsNonRootRefusesRootImage(t *testing.T) {
	n := newNode(t)
	n.start()
	m := podManifest(n.env, "rootless", "", "app="+sleeper) + "    securityContext:\n      runAsNonRoot: true\n"
	n.write("rootless.yaml", m)
	p := n.waitPod("rootless-n1", "CreateContainerConfigError", time.Minute, func(p *v1.Pod) bool {
		w := containerStatus(p, "app").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	if msg := containerStatus(p, "app").State.Waiting.Message; !strings.Contains(msg, "runAsNonRoot") {
		t.Errorf("message %q does not name runAsNonRoot", msg)
	}
	if cs := n.containers(string(p.UID)); len(cs) != 0 {
		t.Errorf("%d containers created for a refused spec", len(cs))
	}
	n.removeAllAndWait()
}

// emptyDir and hostPath volumes: an init container leaves a file in an
// emptyDir for the app container, which writes it to a hostPath directory.
func TestVolumes(t *testing.T) {
	n := newNode(t)
	n.start()
	hostDir := t.TempDir()
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: vols
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  volumes:
  - name: scratch
    emptyDir: {}
  - name: out
    hostPath:
      path: ` + hostDir + `
      type: Directory
  initContainers:
  - name: prepare
    image: ` + n.env.BusyboxImage + `
    command: ["sh", "-c", "echo from-init > /scratch/note"]
    volumeMounts:
    - name: scratch
      mountPath: /scratch
  containers:
  - name: app
    image: ` + n.env.BusyboxImage + `
    command: ["sh", "-c", "cp /scratch/note /out/note"]
    volumeMounts:
    - name: scratch
      mountPath: /scratch
    - name: out
      mountPath: /out
`
	n.write("vols.yaml", manifest)
	p := n.waitPod("vols-n1", "Succeeded", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	b, err := os.ReadFile(filepath.Join(hostDir, "note"))
	if err != nil || string(b) != "from-init\n" {
		t.Fatalf("hostPath file: %q %v", b, err)
	}
	n.removeAllAndWait()
	// The pod's directory goes after the runtime's objects.
	eventually(t, 30*time.Second, "the pod's directory (with its emptyDir) removed", func() (bool, string) {
		_, err := os.Stat(filepath.Join(n.root, "pods", string(p.UID)))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if _, err := os.Stat(filepath.Join(hostDir, "note")); err != nil {
		t.Errorf("the hostPath content was removed with the pod: %v", err)
	}
}
