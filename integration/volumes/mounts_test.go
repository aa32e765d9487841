package volumes_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// subPath and subPathExpr mount a directory (created when missing) or a
// file of a volume; writes through them land in the volume.
func TestSubPath(t *testing.T) {
	ns := newNamespace(t)
	apply(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {app.conf: "listen 80"}
`)
	pod := runPod(t, ns, `
metadata: {name: subpaths}
spec:
  volumes:
  - {name: shared, emptyDir: {}}
  - {name: conf, configMap: {name: conf}}
  containers:
  - name: writer
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    volumeMounts:
    - {name: shared, mountPath: /logs, subPath: logs/writer}
    - {name: shared, mountPath: /mine, subPathExpr: "per-pod/$(POD_NAME)"}
    - {name: conf, mountPath: /etc/app.conf, subPath: app.conf}
  - name: reader
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: shared, mountPath: /all}]
`)
	execIn(t, ns, pod.Name, "writer", "sh", "-c", "echo log > /logs/out && echo me > /mine/id")
	for path, want := range map[string]string{"/all/logs/writer/out": "log\n", "/all/per-pod/subpaths/id": "me\n"} {
		if got := execIn(t, ns, pod.Name, "reader", "cat", path); got != want {
			t.Errorf("%s reads %q, want %q", path, got, want)
		}
	}
	if got := execIn(t, ns, pod.Name, "writer", "cat", "/etc/app.conf"); got != "listen 80" {
		t.Errorf("/etc/app.conf reads %q", got)
	}
	if out, err := tryExec(t, ns, pod.Name, "writer", "test", "-f", "/etc/app.conf"); err != nil {
		t.Errorf("/etc/app.conf is not a regular file in the container: %v %s", err, out)
	}
	// subPaths are bind mounts under the pod's volume-subpaths directory.
	subpaths := mountsUnder(t, filepath.Join(podDir(t, pod), "volume-subpaths"))
	if len(subpaths) != 3 {
		t.Errorf("on the host, %d subPath mounts %v, want 3", len(subpaths), subpaths)
	}
}

// A volumeMount with readOnly is read-only in that container only; a
// hostPath mounted readOnly cannot be written through.
func TestReadOnlyMounts(t *testing.T) {
	ns := newNamespace(t)
	host := t.TempDir()
	pod := runPod(t, ns, `
metadata: {name: readonly}
spec:
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: host, hostPath: {path: `+host+`, type: Directory}}
  containers:
  - name: rw
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  - name: ro
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts:
    - {name: scratch, mountPath: /scratch, readOnly: true}
    - {name: host, mountPath: /host, readOnly: true}
`)
	execIn(t, ns, pod.Name, "rw", "sh", "-c", "echo w > /scratch/f")
	if got := execIn(t, ns, pod.Name, "ro", "cat", "/scratch/f"); got != "w\n" {
		t.Errorf("the read-only container reads %q, want w", got)
	}
	for _, path := range []string{"/scratch/g", "/host/g"} {
		out, err := tryExec(t, ns, pod.Name, "ro", "touch", path)
		if err == nil || !strings.Contains(out, "Read-only file system") {
			t.Errorf("touch %s in the read-only mount: %v %q, want EROFS", path, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(host, "g")); err == nil {
		t.Error("a file appeared in the read-only hostPath")
	}
}

// With mountPropagation HostToContainer, a mount made on the host below a
// hostPath volume (on a shared mount) appears in the container; without
// it (None), it does not. With Bidirectional (privileged containers), a
// mount the container makes appears on the host and in the HostToContainer
// container.
func TestMountPropagation(t *testing.T) {
	ns := newNamespace(t)
	dir := t.TempDir()
	// dir becomes a shared mount point, as /var/lib/kubelet or /mnt are on
	// a systemd host (this machine's / is private).
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Error(err)
		}
	})
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "later")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	pod := runPod(t, ns, `
metadata: {name: propagation}
spec:
  volumes:
  - {name: host, hostPath: {path: `+dir+`, type: Directory}}
  containers:
  - name: slave
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: host, mountPath: /host, mountPropagation: HostToContainer}]
  - name: private
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: host, mountPath: /host, mountPropagation: None}]
  - name: bidirectional
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    securityContext: {privileged: true}
    volumeMounts: [{name: host, mountPath: /host, mountPropagation: Bidirectional}]
`)
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(sub, 0); err != nil {
			t.Error(err)
		}
	})
	if err := os.WriteFile(filepath.Join(sub, "marker"), []byte("propagated"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := execIn(t, ns, pod.Name, "slave", "cat", "/host/later/marker"); got != "propagated" {
		t.Errorf("the HostToContainer container reads %q, want the file of the host's new mount", got)
	}
	if line := mountLine(t, ns, pod.Name, "slave", "/host/later"); !strings.Contains(line, " tmpfs ") {
		t.Errorf("the HostToContainer container's mount at /host/later: %q, want the tmpfs", line)
	}
	if out, err := tryExec(t, ns, pod.Name, "private", "cat", "/host/later/marker"); err == nil {
		t.Errorf("the container with propagation None sees the host's new mount: %q", out)
	}

	fromPod := filepath.Join(dir, "from-pod")
	if err := os.Mkdir(fromPod, 0o755); err != nil {
		t.Fatal(err)
	}
	execIn(t, ns, pod.Name, "bidirectional", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /host/from-pod && echo up > /host/from-pod/f")
	t.Cleanup(func() {
		if err := unix.Unmount(fromPod, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the container's mount on the host: %v", err)
		}
	})
	if data, err := os.ReadFile(filepath.Join(fromPod, "f")); err != nil || string(data) != "up\n" {
		t.Errorf("the host reads %q, %v from the Bidirectional container's mount, want up", data, err)
	}
	if got := execIn(t, ns, pod.Name, "slave", "cat", "/host/from-pod/f"); got != "up\n" {
		t.Errorf("the HostToContainer container reads %q from the Bidirectional container's mount, want up", got)
	}
}

// An emptyDir shared with mount propagation: what a privileged container
// mounts in it (Bidirectional) appears on the host and in a HostToContainer
// container of the pod, and is unmounted when the pod is deleted
// (TestNothingLeftMounted).
func TestMountPropagationEmptyDir(t *testing.T) {
	ns := newNamespace(t)
	pod := runPod(t, ns, `
metadata: {name: emptydir-propagation}
spec:
  volumes:
  - {name: shared, emptyDir: {}}
  containers:
  - name: mounter
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    securityContext: {privileged: true}
    volumeMounts: [{name: shared, mountPath: /shared, mountPropagation: Bidirectional}]
  - name: viewer
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: shared, mountPath: /shared, mountPropagation: HostToContainer}]
`)
	execIn(t, ns, pod.Name, "mounter", "sh", "-c", "mkdir /shared/inner && mount -t tmpfs -o size=1m tmpfs /shared/inner && echo mounted > /shared/inner/f")
	if got := execIn(t, ns, pod.Name, "viewer", "cat", "/shared/inner/f"); got != "mounted\n" {
		t.Errorf("the HostToContainer container reads %q, want the file in the other container's mount", got)
	}
	inner := filepath.Join(podDir(t, pod), "volumes", "kubernetes.io~empty-dir", "shared", "inner")
	if m := mountsUnder(t, inner); len(m) != 1 || m[0].FSType != "tmpfs" {
		t.Errorf("on the host, mounts at %s: %v, want the container's tmpfs", inner, m)
	}
}
