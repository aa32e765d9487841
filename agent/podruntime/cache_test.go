package podruntime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
)

func newTestCache(t *testing.T) (*critest.Server, *cri.Client, *Cache) {
	t.Helper()
	srv := critest.NewServer(t, critest.WithoutContainerEvents())
	c, err := cri.New(context.Background(), cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c, NewCache(New(c))
}

// A read that needs nothing newer than the cache holds costs no CRI call;
// one that needs newer reads the pod once.
func TestCacheListsOnlyWhenTheCacheIsOlder(t *testing.T) {
	srv, c, cache := newTestCache(t)
	ctx := context.Background()
	before := time.Now()
	// Nothing was listed yet: even the oldest read lists.
	if _, err := cache.GetNewerThan(ctx, "u1", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Calls("ListPodSandbox"); got != 1 {
		t.Fatalf("first read: %d ListPodSandbox calls, want 1", got)
	}
	if _, err := cache.GetNewerThan(ctx, "u1", before); err != nil {
		t.Fatal(err)
	}
	if got := srv.Calls("ListPodSandbox"); got != 1 {
		t.Fatalf("a read the cache is newer than listed again: %d calls", got)
	}
	labels := map[string]string{cri.LabelPodUID: "u1", cri.LabelPodName: "web", cri.LabelPodNamespace: "ns"}
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "u1"}, Labels: labels}, ""); err != nil {
		t.Fatal(err)
	}
	wrote := time.Now()
	p, err := cache.GetNewerThan(ctx, "u1", wrote)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sandboxes) != 1 || p.Name != "web" {
		t.Fatalf("after the write: %+v, want the new sandbox", p)
	}
	if got := srv.Calls("ListPodSandbox"); got != 2 {
		t.Fatalf("a read newer than a write: %d ListPodSandbox calls in all, want 2", got)
	}
	if p, _ := cache.GetNewerThan(ctx, "nobody", wrote); p.UID != "nobody" || len(p.Sandboxes)+len(p.Containers) != 0 {
		t.Fatalf("a pod the runtime lacks: %+v, want an empty pod", p)
	}
}

// Readers of a pod waiting at once share one read instead of each listing.
func TestCacheSharesAReadBetweenWaitingReaders(t *testing.T) {
	srv, _, cache := newTestCache(t)
	release := make(chan struct{})
	arrived := srv.Delay("ListPodSandbox", release)
	min := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cache.GetNewerThan(context.Background(), "u1", min)
			errs <- err
		}()
	}
	<-arrived // one read under way, begun after min: every reader waits on it
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Calls("ListPodSandbox"); got != 1 {
		t.Fatalf("20 readers made %d reads, want 1", got)
	}
}

// A failed read fails the readers that waited for it, with the runtime's
// error; the next read lists again.
func TestCacheReportsAFailedRelist(t *testing.T) {
	srv, _, cache := newTestCache(t)
	srv.InjectN("ListContainers", grpcstatus.Error(codes.Unavailable, "runtime busy"), 1)
	_, err := cache.GetNewerThan(context.Background(), "u1", time.Now())
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("read during a failed listing: %v, want ErrUnavailable", err)
	}
	if _, err := cache.GetNewerThan(context.Background(), "u1", time.Now()); err != nil {
		t.Fatalf("read after the failure: %v", err)
	}
}

// A reader whose context ends stops waiting; the read it started still
// serves the others.
func TestCacheReaderContextEnds(t *testing.T) {
	srv, _, cache := newTestCache(t)
	release := make(chan struct{})
	arrived := srv.Delay("ListPodSandbox", release)
	ctx, cancel := context.WithCancel(context.Background())
	min := time.Now()
	done := make(chan error, 1)
	go func() { _, err := cache.GetNewerThan(ctx, "u1", min); done <- err }()
	<-arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v, want context.Canceled", err)
	}
	close(release)
	if _, err := cache.GetNewerThan(context.Background(), "u1", min); err != nil {
		t.Fatal(err)
	}
	if got := srv.Calls("ListPodSandbox"); got != 1 {
		t.Fatalf("%d reads, want the one the cancelled reader started", got)
	}
}

// A relist keeps a read of a pod that began after it, and serves every pod
// from then on without listing.
func TestCacheRelistKeepsNewerReads(t *testing.T) {
	srv, c, cache := newTestCache(t)
	ctx := context.Background()
	if _, err := cache.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{cri.LabelPodUID: "u1", cri.LabelPodName: "web", cri.LabelPodNamespace: "ns"}
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "u1"}, Labels: labels}, ""); err != nil {
		t.Fatal(err)
	}
	wrote := time.Now()
	if p, err := cache.GetNewerThan(ctx, "u1", wrote); err != nil || len(p.Sandboxes) != 1 {
		t.Fatalf("read after the write: %+v %v", p, err)
	}
	lists := srv.Calls("ListPodSandbox")
	for _, uid := range []string{"u1", "u2"} {
		if _, err := cache.GetNewerThan(ctx, types.UID(uid), wrote); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Calls("ListPodSandbox"); got != lists+1 {
		t.Fatalf("u1 read again or u2 not read: %d list calls, want 1", got-lists)
	}
	if _, err := cache.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	lists = srv.Calls("ListPodSandbox")
	if p, _ := cache.GetNewerThan(ctx, "u3", wrote); p.UID != "u3" || len(p.Sandboxes) != 0 {
		t.Fatalf("a pod the relist did not see: %+v", p)
	}
	if p, _ := cache.GetNewerThan(ctx, "u1", wrote); len(p.Sandboxes) != 1 {
		t.Fatalf("u1 after the relist: %+v", p)
	}
	if got := srv.Calls("ListPodSandbox"); got != lists {
		t.Fatalf("reads older than the relist listed %d times", got-lists)
	}
}
