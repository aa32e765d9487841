package volumes_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A secret volume is a tmpfs (the node's disks never hold the secret)
// with the keys as files, defaultMode and per-item modes applied, and it
// is read-only.
func TestSecretVolume(t *testing.T) {
	ns := newNamespace(t)
	apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: creds}
data: {user: YWRtaW4=, pass: czNjcmV0} # admin, s3cret
`)
	pod := runPod(t, ns, `
metadata: {name: sec}
spec:
  volumes:
  - name: strict
    secret: {secretName: creds, defaultMode: 0400}
  - name: default
    secret: {secretName: creds}
  - name: items
    secret:
      secretName: creds
      items: [{key: pass, path: keys/pass, mode: 0600}, {key: user, path: user}]
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts:
    - {name: strict, mountPath: /strict}
    - {name: default, mountPath: /default}
    - {name: items, mountPath: /items}
`)
	for path, want := range map[string]string{
		"/strict/user": "admin", "/strict/pass": "s3cret", "/default/pass": "s3cret", "/items/keys/pass": "s3cret", "/items/user": "admin",
	} {
		if got := execIn(t, ns, pod.Name, "c", "cat", path); got != want {
			t.Errorf("%s reads %q, want %q", path, got, want)
		}
	}
	for path, want := range map[string]string{
		"/strict/user": "400", "/strict/pass": "400", "/default/user": "644", "/items/keys/pass": "600", "/items/user": "644",
	} {
		if got := modeOf(t, ns, pod.Name, "c", path); got != want {
			t.Errorf("%s has mode %s, want %s", path, got, want)
		}
	}
	for _, dir := range []string{"/strict", "/default", "/items"} {
		if line := mountLine(t, ns, pod.Name, "c", dir); !strings.Contains(line, " tmpfs ") || !strings.Contains(line, " ro,") {
			t.Errorf("%s is mounted as %q, want a read-only tmpfs", dir, line)
		}
	}
	for _, name := range []string{"strict", "default", "items"} {
		host := filepath.Join(podDir(t, pod), "volumes", "kubernetes.io~secret", name)
		if m := mountsUnder(t, host); len(m) != 1 || m[0].FSType != "tmpfs" {
			t.Errorf("on the host %s has mounts %v, want one tmpfs", host, m)
		}
	}
	if got := visible(t, ns, pod.Name, "c", "/items"); got != "keys user" {
		t.Errorf("/items lists %q, want keys user", got)
	}
	out, err := tryExec(t, ns, pod.Name, "c", "sh", "-c", "echo x > /strict/user")
	if err == nil || !strings.Contains(out, "Read-only file system") {
		t.Errorf("writing into a secret volume: %v %q, want EROFS", err, out)
	}
}

// With the pod's fsGroup, volumes belong to that group: secret and
// configMap files gain group read, an emptyDir gains group write and the
// setgid bit, so a non-root container in the group reads a 0400 secret.
func TestVolumesFSGroup(t *testing.T) {
	ns := newNamespace(t)
	apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: private}
data: {key: czNjcmV0} # s3cret
---
apiVersion: v1
kind: ConfigMap
metadata: {name: public}
data: {setting: "on"}
`)
	pod := runPod(t, ns, `
metadata: {name: grouped}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000}
  volumes:
  - {name: sec, secret: {secretName: private, defaultMode: 0400}}
  - {name: cfg, configMap: {name: public}}
  - {name: scratch, emptyDir: {}}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts:
    - {name: sec, mountPath: /sec}
    - {name: cfg, mountPath: /cfg}
    - {name: scratch, mountPath: /scratch}
`)
	for path, want := range map[string]string{"/sec/key": "440 2000", "/cfg/setting": "644 2000", "/scratch": "2777 2000"} {
		if got := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "stat", "-L", "-c", "%a %g", path)); got != want {
			t.Errorf("%s has mode and group %q, want %q", path, got, want)
		}
	}
	if got := execIn(t, ns, pod.Name, "c", "cat", "/sec/key"); got != "s3cret" {
		t.Errorf("user 1000 in group 2000 reads %q from the 0400 secret, want s3cret", got)
	}
	execIn(t, ns, pod.Name, "c", "sh", "-c", "echo x > /scratch/f")
	if got := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "stat", "-c", "%u %g", "/scratch/f")); got != "1000 2000" {
		t.Errorf("a file the container made in the emptyDir is owned by %q, want 1000 2000 (setgid dir)", got)
	}
}
