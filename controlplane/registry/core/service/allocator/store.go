package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// The RangeAllocation keys, as kube-apiserver's (under the storage prefix).
const (
	ServiceIPsKey       = "/ranges/serviceips"
	ServiceNodePortsKey = "/ranges/servicenodeports"
)

// ErrRangeMismatch: the stored bitmap is of another range (the flag
// changed); the repair rewrites it for the configured one.
var ErrRangeMismatch = errors.New("the provided range does not match the current range")

// ItemError is a requested item that could not be taken.
type ItemError struct {
	Item string
	Err  error
}

func (e *ItemError) Error() string { return e.Err.Error() }
func (e *ItemError) Unwrap() error { return e.Err }

// Allocator hands out the items of one Range, its bitmap stored in etcd
// under one key. Every change is one compare-and-swap of that object, so
// allocators of several servers sharing etcd agree. Safe for concurrent use.
type Allocator struct {
	r     Range
	store apistorage.Interface
	key   string
	// mu serializes this server's changes (so they do not collide with
	// each other's compare-and-swap); last is the object as last read or
	// written, the starting point of the next change (a stale one costs a
	// failed swap and a read).
	mu   sync.Mutex
	last *corev1.RangeAllocation
}

// New is an allocator of r kept at key in store (which must store
// core/v1 RangeAllocations).
func New(r Range, store apistorage.Interface, key string) *Allocator {
	return &Allocator{r: r, store: store, key: key}
}

// Range is the allocator's range.
func (a *Allocator) Range() Range { return a.r }

// Allocate takes the requested items and n more of the allocator's choice
// (returned), all in one write; on error nothing is taken. A requested
// item that is taken or outside the range fails with an *ItemError
// wrapping ErrAllocated or ErrNotInRange; no free item left: ErrFull.
// With dryRun the check runs on the stored bitmap and nothing is written.
func (a *Allocator) Allocate(ctx context.Context, requested []string, n int, dryRun bool) ([]string, error) {
	var picked []string
	err := a.change(ctx, dryRun, func(b *Bitmap) error {
		picked = picked[:0]
		for _, item := range requested {
			off, err := a.r.Offset(item)
			if err != nil {
				return &ItemError{Item: item, Err: err}
			}
			if !b.Set(off) {
				return &ItemError{Item: item, Err: a.r.allocated()}
			}
		}
		for range n {
			off, ok := b.Next(rand.IntN(b.Size()), a.r.LowBand())
			if !ok {
				return ErrFull
			}
			b.Set(off)
			picked = append(picked, a.r.Item(off))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return picked, nil
}

// Release frees items; items outside the range are ignored.
func (a *Allocator) Release(ctx context.Context, items []string) error {
	if len(items) == 0 {
		return nil
	}
	return a.change(ctx, false, func(b *Bitmap) error {
		for _, item := range items {
			if off, err := a.r.Offset(item); err == nil {
				b.Clear(off)
			}
		}
		return nil
	})
}

// Has reports whether item is taken.
func (a *Allocator) Has(ctx context.Context, item string) (bool, error) {
	b, _, err := a.Snapshot(ctx)
	if err != nil {
		return false, err
	}
	off, err := a.r.Offset(item)
	return err == nil && b.Has(off), nil
}

// Snapshot reads the stored bitmap and its resourceVersion ("" when none
// is stored yet). A bitmap of another range is ErrRangeMismatch, with the
// resourceVersion.
func (a *Allocator) Snapshot(ctx context.Context) (*Bitmap, string, error) {
	ra := &corev1.RangeAllocation{}
	err := a.store.Get(ctx, a.key, apistorage.GetOptions{IgnoreNotFound: true}, ra)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", a.key, err)
	}
	if ra.Range != "" && ra.Range != a.r.String() {
		return nil, ra.ResourceVersion, fmt.Errorf("%s holds %s, configured %s: %w", a.key, ra.Range, a.r, ErrRangeMismatch)
	}
	return NewBitmap(a.r.Size(), ra.Data), ra.ResourceVersion, nil
}

// Replace writes b if the stored object is still at resourceVersion rv (""
// for none); otherwise a Conflict error.
func (a *Allocator) Replace(ctx context.Context, b *Bitmap, rv string) error {
	return a.store.GuaranteedUpdate(ctx, a.key, &corev1.RangeAllocation{}, true, nil,
		func(in runtime.Object, _ apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
			ra := in.(*corev1.RangeAllocation)
			if ra.ResourceVersion != rv {
				return nil, nil, apierrors.NewConflict(schema.GroupResource{Resource: "rangeallocations"}, a.key,
					fmt.Errorf("changed since it was read (resourceVersion %s, read %s)", ra.ResourceVersion, rv))
			}
			ra.Range, ra.Data = a.r.String(), b.Data()
			return ra, nil, nil
		}, nil)
}

// change applies fn to the stored bitmap and writes the result (retrying
// on conflicting writes); with dryRun fn runs on a copy that is dropped.
func (a *Allocator) change(ctx context.Context, dryRun bool, fn func(*Bitmap) error) error {
	if dryRun {
		b, _, err := a.Snapshot(ctx)
		if err != nil {
			return err
		}
		return fn(b)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var cached runtime.Object
	if a.last != nil {
		cached = a.last.DeepCopy()
	}
	out := &corev1.RangeAllocation{}
	err := a.store.GuaranteedUpdate(ctx, a.key, out, true, nil,
		func(in runtime.Object, _ apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
			ra := in.(*corev1.RangeAllocation).DeepCopy()
			if ra.Range != "" && ra.Range != a.r.String() {
				return nil, nil, fmt.Errorf("%s holds %s, configured %s: %w", a.key, ra.Range, a.r, ErrRangeMismatch)
			}
			b := NewBitmap(a.r.Size(), ra.Data)
			if err := fn(b); err != nil {
				return nil, nil, err
			}
			ra.Range, ra.Data = a.r.String(), b.Data()
			return ra, nil, nil
		}, cached)
	if err != nil {
		a.last = nil
		return err
	}
	a.last = out
	return nil
}
