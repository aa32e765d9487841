package podruntime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
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
// one that needs newer relists once.
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

// Readers waiting at once share relists instead of each listing.
func TestCacheSharesARelistBetweenWaitingReaders(t *testing.T) {
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
	<-arrived // one relist under way, begun after min: every reader waits on it
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Calls("ListPodSandbox"); got != 1 {
		t.Fatalf("20 readers made %d relists, want 1", got)
	}
}

// A failed relist fails the reads that waited for it, with the runtime's
// error; the next read relists again.
func TestCacheReportsAFailedRelist(t *testing.T) {
	srv, _, cache := newTestCache(t)
	srv.InjectN("ListContainers", grpcstatus.Error(codes.Unavailable, "runtime busy"), 1)
	_, err := cache.GetNewerThan(context.Background(), "u1", time.Now())
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("read during a failed relist: %v, want ErrUnavailable", err)
	}
	if _, err := cache.GetNewerThan(context.Background(), "u1", time.Now()); err != nil {
		t.Fatalf("read after the failure: %v", err)
	}
}

// A reader whose context ends stops waiting; the relist it started still
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
		t.Fatalf("%d relists, want the one the cancelled reader started", got)
	}
}
