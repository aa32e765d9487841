package leaderelect

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"berth/internal/errdefs"
)

var fast = Timing{LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 50 * time.Millisecond}

func newElector(t *testing.T, client kubernetes.Interface, id string) *Elector {
	t.Helper()
	e, err := New(Config{Client: client, Namespace: "kube-system", Name: "test", Identity: id, Timing: fast})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func holder(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "test", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// run starts e.Run(ctx, term) and returns its stop and result.
func run(e *Elector, term func(context.Context) error) (context.CancelFunc, <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, term) }()
	return cancel, done
}

func TestConfigValidate(t *testing.T) {
	client := fake.NewClientset()
	c := Config{Client: client, Namespace: "ns", Name: "lease"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Identity == "" || c.LeaseDuration != DefaultLeaseDuration || c.RenewDeadline != DefaultRenewDeadline || c.RetryPeriod != DefaultRetryPeriod {
		t.Fatalf("defaults not filled: %+v", c)
	}
	for name, bad := range map[string]Config{
		"no client":   {Namespace: "ns", Name: "lease"},
		"no name":     {Client: client, Namespace: "ns"},
		"bad timings": {Client: client, Namespace: "ns", Name: "lease", Timing: Timing{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}},
	} {
		if err := bad.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
	}
}

// The term runs while the Lease is held; ctx's end ends it, releases the
// Lease and returns nil.
func TestRunHoldsTheLeaseForTheTermAndReleasesIt(t *testing.T) {
	client := fake.NewClientset()
	e := newElector(t, client, "a")
	inTerm := make(chan struct{})
	stop, done := run(e, func(ctx context.Context) error {
		close(inTerm)
		<-ctx.Done()
		return nil
	})
	<-inTerm
	eventually(t, "a leads", func() bool { return e.Leading() && holder(t, client) == "a" })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if e.Leading() || holder(t, client) != "" {
		t.Fatalf("after Run: leading %v, holder %q; want released", e.Leading(), holder(t, client))
	}
}

func TestRunEndsWithTheTermsError(t *testing.T) {
	boom := errors.New("boom")
	e := newElector(t, fake.NewClientset(), "a")
	stop, done := run(e, func(context.Context) error { return boom })
	defer stop()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("Run = %v, want the term's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end with its term")
	}
}

// Of two candidates one leads; when it stops, the other takes over, and
// their terms never overlap.
func TestOneCandidateLeadsAtATime(t *testing.T) {
	client := fake.NewClientset()
	var running atomic.Int32
	overlap := make(chan struct{}, 1)
	term := func(ctx context.Context) error {
		if running.Add(1) > 1 {
			overlap <- struct{}{}
		}
		defer running.Add(-1)
		<-ctx.Done()
		return nil
	}
	a, b := newElector(t, client, "a"), newElector(t, client, "b")
	stopA, doneA := run(a, term)
	eventually(t, "a leads", func() bool { return a.Leading() && holder(t, client) == "a" })
	stopB, doneB := run(b, term)
	defer func() { stopB(); <-doneB }()
	time.Sleep(3 * fast.RetryPeriod) // b campaigns meanwhile
	if b.Leading() {
		t.Fatal("b leads while a holds the Lease")
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("a: %v", err)
	}
	eventually(t, "b takes over", func() bool { return b.Leading() && holder(t, client) == "b" })
	select {
	case <-overlap:
		t.Fatal("two terms ran at once")
	default:
	}
}
