package volumes_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resyncTimeout bounds how long an update of a configMap, secret or pod
// takes to reach a running pod's files: the agent's volume resync period
// (10 s) plus the time to read the object, with margin for a loaded machine.
const resyncTimeout = 90 * time.Second

// tsDirName is the atomic writer's timestamped directory, as upstream
// names it.
var tsDirName = regexp.MustCompile(`^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$`)

// modeOf is `stat -L -c %a path` in the container.
func modeOf(t *testing.T, ns, pod, container, path string) string {
	t.Helper()
	return strings.TrimSpace(execIn(t, ns, pod, container, "stat", "-L", "-c", "%a", path))
}

// A configMap volume has every key as a file (or the items at their
// paths), with defaultMode and per-item modes, behind the ..data symlink
// of the atomic writer; an optional configMap that is missing is an empty
// volume. configMap volumes are read-only.
func TestConfigMapVolume(t *testing.T) {
	ns := newNamespace(t)
	apply(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  a: alpha
  b: beta
binaryData:
  bin: AAEC
`)
	pod := runPod(t, ns, `
metadata: {name: cm}
spec:
  volumes:
  - name: all
    configMap: {name: cfg, defaultMode: 0440}
  - name: items
    configMap:
      name: cfg
      items:
      - {key: a, path: sub/dir/alpha, mode: 0600}
      - {key: b, path: beta}
  - name: optional
    configMap: {name: not-there, optional: true}
  - name: optional-key
    configMap:
      name: cfg
      optional: true
      items: [{key: no-such-key, path: x}, {key: a, path: a}]
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts:
    - {name: all, mountPath: /all}
    - {name: items, mountPath: /items}
    - {name: optional, mountPath: /optional}
    - {name: optional-key, mountPath: /optional-key}
`)
	for path, want := range map[string]string{
		"/all/a": "alpha", "/all/b": "beta", "/items/sub/dir/alpha": "alpha", "/items/beta": "beta", "/optional-key/a": "alpha",
	} {
		if got := execIn(t, ns, pod.Name, "c", "cat", path); got != want {
			t.Errorf("%s reads %q, want %q", path, got, want)
		}
	}
	if got := execIn(t, ns, pod.Name, "c", "cat", "/all/bin"); got != "\x00\x01\x02" {
		t.Errorf("/all/bin (binaryData) is %q, want bytes 00 01 02", got)
	}
	for path, want := range map[string]string{
		"/all/a": "440", "/all/bin": "440", "/items/sub/dir/alpha": "600", "/items/beta": "644", "/optional-key/a": "644",
	} {
		if got := modeOf(t, ns, pod.Name, "c", path); got != want {
			t.Errorf("%s has mode %s, want %s", path, got, want)
		}
	}
	if got := visible(t, ns, pod.Name, "c", "/items"); got != "beta sub" {
		t.Errorf("/items lists %q, want only the items' paths (beta sub)", got)
	}
	if got := visible(t, ns, pod.Name, "c", "/optional"); got != "" {
		t.Errorf("the missing optional configMap's volume lists %q, want nothing", got)
	}
	if got := visible(t, ns, pod.Name, "c", "/optional-key"); got != "a" {
		t.Errorf("/optional-key lists %q, want a (the missing optional key left out)", got)
	}

	// The atomic writer's layout: each key a symlink into ..data, itself a
	// symlink to the timestamped directory holding the files.
	if got := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "readlink", "/all/a")); got != "..data/a" {
		t.Errorf("/all/a links to %q, want ..data/a", got)
	}
	if got := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "readlink", "/items/sub")); got != "..data/sub" {
		t.Errorf("/items/sub links to %q, want ..data/sub (the first path element)", got)
	}
	ts := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "readlink", "/all/..data"))
	if !tsDirName.MatchString(ts) {
		t.Errorf("/all/..data links to %q, want a timestamped directory", ts)
	}
	all := strings.Fields(execIn(t, ns, pod.Name, "c", "ls", "-a", "/all"))
	want := []string{".", "..", ts, "..data", "a", "b", "bin"}
	if strings.Join(all, " ") != strings.Join(want, " ") {
		t.Errorf("ls -a /all: %v, want %v", all, want)
	}
	if got := execIn(t, ns, pod.Name, "c", "cat", "/all/"+ts+"/b"); got != "beta" {
		t.Errorf("the timestamped directory holds b = %q", got)
	}

	out, err := tryExec(t, ns, pod.Name, "c", "touch", "/all/new")
	if err == nil || !strings.Contains(out, "Read-only file system") {
		t.Errorf("writing into a configMap volume: %v %q, want EROFS", err, out)
	}
}

// visible is the names in dir the container sees, without the atomic
// writer's dot entries, sorted and space-separated.
func visible(t *testing.T, ns, pod, container, dir string) string {
	t.Helper()
	return strings.Join(strings.Fields(execIn(t, ns, pod, container, "ls", dir)), " ")
}

// A configMap volume whose configMap does not exist (not optional) keeps
// the pod in ContainerCreating with a FailedMount event naming it; once the
// configMap is created, the retried set-up succeeds and the pod runs.
func TestConfigMapMissing(t *testing.T) {
	ns := newNamespace(t)
	pod := createPod(t, ns, `
metadata: {name: waits}
spec:
  volumes:
  - {name: cfg, configMap: {name: later}}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts: [{name: cfg, mountPath: /cfg}]
`)
	want := `MountVolume.SetUp failed for volume "cfg" : configmap "later" not found`
	ev := waitEventMatching(t, ns, pod.Name, "FailedMount", func(m string) bool { return m == want })
	if ev.Type != v1.EventTypeWarning {
		t.Errorf("event %s %q, want Warning %q", ev.Type, ev.Message, want)
	}
	waitContainerCreating(t, ns, pod.Name)

	apply(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: later}
data: {k: v}
`)
	waitRunning(t, ns, pod.Name)
	if got := execIn(t, ns, pod.Name, "c", "cat", "/cfg/k"); got != "v" {
		t.Errorf("/cfg/k reads %q, want v", got)
	}
}

// A running pod sees a configMap's update within the agent's resync period:
// changed, added and removed keys, all at once (a new timestamped
// directory behind ..data); a file mounted with subPath keeps its content,
// as upstream. Once the configMap is deleted, the files stay.
func TestConfigMapUpdate(t *testing.T) {
	ns := newNamespace(t)
	c := cluster(t)
	apply(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: live}
data: {a: one, b: one}
`)
	pod := runPod(t, ns, `
metadata: {name: watcher}
spec:
  volumes:
  - {name: cfg, configMap: {name: live}}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: cfg, mountPath: /etc/a.conf, subPath: a}
`)
	if got := execIn(t, ns, pod.Name, "c", "cat", "/etc/a.conf"); got != "one" {
		t.Fatalf("the subPath file reads %q, want one", got)
	}
	before := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "readlink", "/cfg/..data"))

	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "live", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"a": "two", "c": "two"}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, resyncTimeout, "the pod to see the configMap's update", func() (bool, string) {
		out, err := tryExec(t, ns, pod.Name, "c", "sh", "-c", "cat /cfg/a; echo; ls /cfg")
		if err != nil {
			return false, out
		}
		return out == "two\na\nc\n", out
	})
	after := strings.TrimSpace(execIn(t, ns, pod.Name, "c", "readlink", "/cfg/..data"))
	if after == before || !tsDirName.MatchString(after) {
		t.Errorf("..data links to %q after the update (%q before), want a new timestamped directory", after, before)
	}
	if got := visible(t, ns, pod.Name, "c", "/cfg/"+after); got != "a c" {
		t.Errorf("the new timestamped directory holds %q, want a c", got)
	}
	if out, err := tryExec(t, ns, pod.Name, "c", "ls", "-a", "/cfg"); err != nil || strings.Contains(out, before) {
		t.Errorf("the old timestamped directory %s is still there: %q %v", before, out, err)
	}
	if got := execIn(t, ns, pod.Name, "c", "cat", "/etc/a.conf"); got != "one" {
		t.Errorf("the subPath file reads %q after the update, want the old content one (subPath mounts are not updated)", got)
	}
	if p := getPod(t, ns, pod.Name); p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the container restarted: %s", describe(t, p))
	}

	// A deleted configMap: the running pod keeps the last content, and the
	// failed update is a FailedMount event, as with the kubelet.
	if err := c.Client.CoreV1().ConfigMaps(ns).Delete(context.Background(), "live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pod's first FailedMount may be the Node authorizer's refusal from
	// its start (see waitEventMatching): wait for the one the deletion causes.
	want := `MountVolume.SetUp failed for volume "cfg" : configmap "live" not found`
	waitEventMatching(t, ns, pod.Name, "FailedMount", func(m string) bool { return m == want })
	if got := execIn(t, ns, pod.Name, "c", "cat", "/cfg/a"); got != "two" {
		t.Errorf("after the configMap's deletion /cfg/a reads %q, want the last content two", got)
	}
}
