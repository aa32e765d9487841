package volumes_test

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// hostPath volumes of the *OrCreate types create what is missing (a 0755
// directory, an empty 0644 file); what the container writes is on the host.
func TestHostPathOrCreate(t *testing.T) {
	ns := newNamespace(t)
	base := t.TempDir()
	dir := filepath.Join(base, "made", "dir")
	file := filepath.Join(base, "file.txt")
	existing := filepath.Join(base, "existing")
	if err := os.WriteFile(existing, []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := runPod(t, ns, `
metadata: {name: hostpaths}
spec:
  volumes:
  - {name: dir, hostPath: {path: `+dir+`, type: DirectoryOrCreate}}
  - {name: file, hostPath: {path: `+file+`, type: FileOrCreate}}
  - {name: existing, hostPath: {path: `+existing+`, type: File}}
  - {name: base, hostPath: {path: `+base+`}}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts:
    - {name: dir, mountPath: /dir}
    - {name: file, mountPath: /file.txt}
    - {name: existing, mountPath: /existing}
    - {name: base, mountPath: /base}
`)
	for path, want := range map[string]os.FileMode{dir: os.ModeDir | 0o755, file: 0o644} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatalf("the hostPath volume did not create %s: %v", path, err)
		}
		if info.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, info.Mode(), want)
		}
	}
	execIn(t, ns, pod.Name, "c", "sh", "-c", "echo dir > /dir/x && echo file > /file.txt")
	for path, want := range map[string]string{filepath.Join(dir, "x"): "dir\n", file: "file\n"} {
		if data, err := os.ReadFile(path); err != nil || string(data) != want {
			t.Errorf("host %s: %q, %v; want %q", path, data, err, want)
		}
	}
	if got := execIn(t, ns, pod.Name, "c", "cat", "/existing"); got != "from the host\n" {
		t.Errorf("/existing reads %q", got)
	}
	if got := execIn(t, ns, pod.Name, "c", "cat", "/base/made/dir/x"); got != "dir\n" {
		t.Errorf("/base/made/dir/x reads %q", got)
	}
}

// A hostPath of type Directory that does not exist fails the type check: a
// FailedMount event with upstream's message, and the pod stays in
// ContainerCreating (no sandbox) until the directory appears.
func TestHostPathDirectoryMissing(t *testing.T) {
	ns := newNamespace(t)
	missing := filepath.Join(t.TempDir(), "not-there")
	pod := createPod(t, ns, `
metadata: {name: missing}
spec:
  volumes:
  - {name: data, hostPath: {path: `+missing+`, type: Directory}}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: data, mountPath: /data}]
`)
	ev := waitEvent(t, ns, pod.Name, "FailedMount")
	want := `MountVolume.SetUp failed for volume "data" : hostPath type check failed: ` + missing + ` is not a directory`
	if ev.Message != want || ev.Type != v1.EventTypeWarning {
		t.Errorf("event %s %q, want Warning %q", ev.Type, ev.Message, want)
	}
	waitContainerCreating(t, ns, pod.Name)
	// Once it is a directory, the retried set-up succeeds.
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	pod = waitRunning(t, ns, pod.Name)
	execIn(t, ns, pod.Name, "c", "touch", "/data/ok")
	if _, err := os.Stat(filepath.Join(missing, "ok")); err != nil {
		t.Error(err)
	}
}
