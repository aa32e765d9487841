package manifest

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
	"berth/internal/syncbuf"
)

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: ["sleep", "3600"]
`

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api","namespace":"tools"},
 "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}`

func TestLoadStaticPodIdentity(t *testing.T) {
	pod, err := Load([]byte(podYAML), "/etc/manifests/web.yaml", "node1")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "web-node1" || pod.Namespace != "default" || pod.Spec.NodeName != "node1" {
		t.Errorf("name %q namespace %q nodeName %q", pod.Name, pod.Namespace, pod.Spec.NodeName)
	}
	if len(pod.UID) != 32 || pod.Annotations[AnnotationConfigHash] != string(pod.UID) || pod.Annotations[AnnotationConfigSource] != "file" {
		t.Errorf("uid %q annotations %v", pod.UID, pod.Annotations)
	}
	// Defaults from the shared API defaulting.
	if pod.Spec.RestartPolicy != v1.RestartPolicyAlways || pod.Spec.TerminationGracePeriodSeconds == nil ||
		pod.Spec.Containers[0].TerminationMessagePath != "/dev/termination-log" || pod.Spec.Containers[0].ImagePullPolicy != v1.PullIfNotPresent {
		t.Errorf("defaults not applied: %+v", pod.Spec)
	}
	same, _ := Load([]byte(podYAML), "/etc/manifests/web.yaml", "node1")
	if same.UID != pod.UID {
		t.Error("the UID is not stable")
	}
	for _, other := range []struct{ data, file, node string }{
		{strings.Replace(podYAML, "3600", "3601", 1), "/etc/manifests/web.yaml", "node1"},
		{podYAML, "/etc/manifests/web.yaml", "node2"},
		{podYAML, "/etc/manifests/web2.yaml", "node1"},
	} {
		if UID([]byte(other.data), other.node, other.file) == pod.UID {
			t.Errorf("UID unchanged for %+v", other)
		}
	}
	reformatted := strings.Replace(podYAML, "metadata:\n", "# a comment\nmetadata:\n", 1)
	if UID([]byte(reformatted), "node1", "/etc/manifests/web.yaml") != pod.UID {
		t.Error("a comment changed the UID")
	}
	j, err := Load([]byte(podJSON), "/m/api.json", "node1")
	if err != nil || j.Name != "api-node1" || j.Namespace != "tools" {
		t.Fatalf("JSON manifest: %v %v", j, err)
	}
}

func TestLoadErrorsNameFileAndField(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"not a pod", "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n", "Pod"},
		{"garbage", "{{{", "bad.yaml"},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers: []\n", "spec.containers"},
		{"bad restart policy", strings.Replace(podYAML, "spec:\n", "spec:\n  restartPolicy: Sometimes\n", 1), "spec.restartPolicy"},
		{"bad container name", strings.Replace(podYAML, "name: app", "name: App_1", 1), "spec.containers[0].name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.data), "/m/bad.yaml", "node1")
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/m/bad.yaml") {
				t.Fatalf("error %q: want ErrInvalidArgument naming the file and %q", err, tc.want)
			}
		})
	}
}

func next(t *testing.T, src *Source) Event {
	t.Helper()
	select {
	case ev := <-src.Events():
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return Event{}
	}
}

func TestSourceFollowsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		// Write then rename, as editors and tests should, so a scan never
		// reads half a file.
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("web.yaml", podYAML)
	write("broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers: []\n")
	var logs syncbuf.Buffer
	src, err := New(Config{Dir: dir, NodeName: "n1", Rescan: time.Hour, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()

	ev := next(t, src)
	if ev.Op != Add || ev.Pod.Name != "web-n1" || ev.File != filepath.Join(dir, "web.yaml") {
		t.Fatalf("first event %+v, want Add web-n1", ev)
	}
	first := ev.Pod.UID
	if ev := next(t, src); ev.Op != Synced {
		t.Fatalf("want Synced, got %+v", ev)
	}
	if l := logs.String(); !strings.Contains(l, "broken.yaml") || !strings.Contains(l, "spec.containers") {
		t.Fatalf("invalid manifest not logged with file and field: %s", l)
	}

	write("api.json", podJSON) // added
	if ev := next(t, src); ev.Op != Add || ev.Pod.Name != "api-n1" {
		t.Fatalf("want Add api-n1, got %+v", ev)
	}
	write("web.yaml", strings.Replace(podYAML, "3600", "60", 1)) // changed: replaced
	ev = next(t, src)
	if ev.Op != Remove || ev.Pod.UID != first {
		t.Fatalf("want Remove of the old web, got %+v", ev)
	}
	ev = next(t, src)
	if ev.Op != Add || ev.Pod.UID == first || ev.Pod.Spec.Containers[0].Command[1] != "60" {
		t.Fatalf("want Add of the new web, got %+v", ev)
	}
	if err := os.Remove(filepath.Join(dir, "api.json")); err != nil { // removed
		t.Fatal(err)
	}
	if ev := next(t, src); ev.Op != Remove || ev.Pod.Name != "api-n1" {
		t.Fatalf("want Remove api-n1, got %+v", ev)
	}
	// A duplicate pod name is refused; the first file keeps it.
	write("web-copy.yaml", podYAML)
	write("other.yaml", strings.Replace(podYAML, "name: web", "name: other", 1))
	if ev := next(t, src); ev.Op != Add || ev.Pod.Name != "other-n1" {
		t.Fatalf("want Add other-n1 only, got %+v", ev)
	}
	if l := logs.String(); !strings.Contains(l, "web-copy.yaml") || !strings.Contains(l, "already defined") {
		t.Fatalf("duplicate not logged: %s", l)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestSourceRescanFindsChangesWithoutInotify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later") // does not exist yet: no watch
	src, err := New(Config{Dir: dir, NodeName: "n1", Rescan: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go src.Run(ctx)
	if ev := next(t, src); ev.Op != Synced {
		t.Fatalf("want Synced for a missing dir, got %+v", ev)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(podYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, src); ev.Op != Add || ev.Pod.Name != "web-n1" {
		t.Fatalf("want Add from the rescan, got %+v", ev)
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{{NodeName: "n"}, {Dir: "/x"}} {
		if _, err := New(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v, want ErrInvalidArgument", cfg, err)
		}
	}
}
