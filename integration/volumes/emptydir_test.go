package volumes_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountLine is the /proc/mounts line of the mount at path, read in the
// container ("" when nothing is mounted there).
func mountLine(t *testing.T, ns, pod, container, path string) string {
	t.Helper()
	for _, line := range strings.Split(execIn(t, ns, pod, container, "cat", "/proc/mounts"), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[1] == path {
			return line
		}
	}
	return ""
}

// An emptyDir on disk is a directory under the pod's dir, shared by the
// pod's containers and written through to the host.
func TestEmptyDirDisk(t *testing.T) {
	ns := newNamespace(t)
	pod := runPod(t, ns, `
metadata: {name: scratch}
spec:
  volumes:
  - name: scratch
    emptyDir: {}
  containers:
  - name: writer
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  - name: reader
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: scratch, mountPath: /data}]
`)
	execIn(t, ns, pod.Name, "writer", "sh", "-c", "echo hello > /scratch/note")
	if got := execIn(t, ns, pod.Name, "reader", "cat", "/data/note"); got != "hello\n" {
		t.Errorf("the other container reads %q, want %q", got, "hello\n")
	}
	host := filepath.Join(podDir(t, pod), "volumes", "kubernetes.io~empty-dir", "scratch")
	if data, err := os.ReadFile(filepath.Join(host, "note")); err != nil || string(data) != "hello\n" {
		t.Errorf("on the host %s/note: %q, %v; want %q", host, data, err, "hello\n")
	}
	if got := strings.TrimSpace(execIn(t, ns, pod.Name, "reader", "stat", "-c", "%a", "/data")); got != "777" {
		t.Errorf("the emptyDir's mode is %s, want 777", got)
	}
	if line := mountLine(t, ns, pod.Name, "reader", "/data"); strings.Contains(line, " tmpfs ") || line == "" {
		t.Errorf("a disk emptyDir is mounted as %q, want a bind mount of the node's disk", line)
	}
	if left := mountsUnder(t, host); len(left) > 0 {
		t.Errorf("a disk emptyDir has a mount on the host: %v", left)
	}
}

// An emptyDir of medium Memory is a tmpfs whose size is the sizeLimit.
func TestEmptyDirMemory(t *testing.T) {
	ns := newNamespace(t)
	pod := runPod(t, ns, `
metadata: {name: ram}
spec:
  volumes:
  - name: ram
    emptyDir: {medium: Memory, sizeLimit: 64Mi}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: ram, mountPath: /ram}]
`)
	line := mountLine(t, ns, pod.Name, "c", "/ram")
	f := strings.Fields(line)
	if len(f) < 4 || f[2] != "tmpfs" {
		t.Fatalf("/ram is mounted as %q, want a tmpfs", line)
	}
	if !strings.Contains(","+f[3]+",", ",size=65536k,") {
		t.Errorf("/ram's options are %q, want size=65536k (the sizeLimit 64Mi)", f[3])
	}
	execIn(t, ns, pod.Name, "c", "sh", "-c", "echo in-memory > /ram/x")
	host := filepath.Join(podDir(t, pod), "volumes", "kubernetes.io~empty-dir", "ram")
	mounts := mountsUnder(t, host)
	if len(mounts) != 1 || mounts[0].FSType != "tmpfs" {
		t.Fatalf("on the host, %s has mounts %v, want one tmpfs", host, mounts)
	}
	if data, err := os.ReadFile(filepath.Join(host, "x")); err != nil || string(data) != "in-memory\n" {
		t.Errorf("on the host: %q, %v", data, err)
	}
	// Writing past the size fails inside the container.
	out, err := tryExec(t, ns, pod.Name, "c", "dd", "if=/dev/zero", "of=/ram/big", "bs=1M", "count=80")
	if err == nil || !strings.Contains(out, "No space left on device") {
		t.Errorf("writing 80 MiB into a 64 MiB tmpfs: %v, %q; want ENOSPC", err, out)
	}
}
