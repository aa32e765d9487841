package manifest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// handlerLog records what a PodSource delivers ("update <name>", "remove
// <name>").
type handlerLog chan string

func (h handlerLog) Update(pod *v1.Pod) { h <- "update " + pod.Name }
func (h handlerLog) Remove(pod *v1.Pod) { h <- "remove " + pod.Name }

func (h handlerLog) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-h:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered")
		return ""
	}
}

// A PodSource delivers the directory's pods to its Handler (adds as
// Update, removals as Remove) and closes Synced after the first scan.
func TestPodSourceDeliversToItsHandler(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(podYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	h := make(handlerLog, 16)
	src, err := NewPodSource(Config{Dir: dir, NodeName: "n1", Rescan: time.Hour}, h)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-src.Synced():
		t.Fatal("Synced closed before the first scan")
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	if got := h.next(t); got != "update web-n1" {
		t.Fatalf("first delivery %q, want update web-n1", got)
	}
	select {
	case <-src.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("Synced not closed after the first scan")
	}
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	if got := h.next(t); got != "remove web-n1" {
		t.Fatalf("after the file's removal %q, want remove web-n1", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := NewPodSource(Config{NodeName: "n1"}, h); err == nil {
		t.Fatal("NewPodSource without Dir: no error")
	}
}
