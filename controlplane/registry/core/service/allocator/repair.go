package allocator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// LeakRepairs is how many consecutive repairs must find an item taken by no
// Service before it is freed, as kube-apiserver's: a create in flight has
// taken its items but not yet written its Service.
const LeakRepairs = 3

// Use is one item held by one Service (namespace/name).
type Use struct {
	Service string
	Item    string
}

// Finding kinds.
const (
	// FindingRepaired: a Service holds an item the bitmap did not have;
	// now it does.
	FindingRepaired = "Repaired"
	// FindingLeaked: an item no Service holds, seen in LeakRepairs repairs
	// in a row; freed.
	FindingLeaked = "Leaked"
	// FindingDuplicate: several Services hold one item; reported, left as
	// it is (one of them must be recreated).
	FindingDuplicate = "Duplicate"
	// FindingOutOfRange: a Service holds an item outside the range.
	FindingOutOfRange = "OutOfRange"
)

// Finding is one inconsistency a repair found.
type Finding struct {
	Kind     string
	Item     string
	Services []string
}

func (f Finding) String() string {
	switch f.Kind {
	case FindingRepaired:
		return fmt.Sprintf("%s held by %v was not allocated; repaired", f.Item, f.Services)
	case FindingLeaked:
		return fmt.Sprintf("%s is held by no service; released", f.Item)
	case FindingDuplicate:
		return fmt.Sprintf("%s is held by several services: %v", f.Item, f.Services)
	default:
		return fmt.Sprintf("%s held by %v is not in the range", f.Item, f.Services)
	}
}

// PlanRepair rebuilds a range's bitmap from the items Services hold: every
// held item in the range is taken; an item taken in stored but held by
// no Service stays taken until leaks (offset → consecutive repairs that
// saw it unheld, updated in place) reaches LeakRepairs. Pure.
func PlanRepair(r Range, stored *Bitmap, uses []Use, leaks map[int]int) (*Bitmap, []Finding) {
	out := NewBitmap(r.Size(), nil)
	holders := map[int][]string{}
	var findings []Finding
	outside := map[string][]string{}
	for _, u := range uses {
		off, err := r.Offset(u.Item)
		if err != nil {
			outside[u.Item] = append(outside[u.Item], u.Service)
			continue
		}
		if !slices.Contains(holders[off], u.Service) {
			holders[off] = append(holders[off], u.Service)
		}
		out.Set(off)
	}
	for _, item := range sortedKeys(outside) {
		findings = append(findings, Finding{Kind: FindingOutOfRange, Item: item, Services: outside[item]})
	}
	for _, off := range out.Offsets() {
		h := holders[off]
		delete(leaks, off)
		if !stored.Has(off) {
			findings = append(findings, Finding{Kind: FindingRepaired, Item: r.Item(off), Services: h})
		}
		if len(h) > 1 {
			findings = append(findings, Finding{Kind: FindingDuplicate, Item: r.Item(off), Services: h})
		}
	}
	seen := map[int]bool{}
	for _, off := range stored.Offsets() {
		if out.Has(off) {
			continue
		}
		seen[off] = true
		leaks[off]++
		if leaks[off] >= LeakRepairs {
			delete(leaks, off)
			findings = append(findings, Finding{Kind: FindingLeaked, Item: r.Item(off)})
			continue
		}
		out.Set(off)
	}
	for off := range leaks {
		if !seen[off] {
			delete(leaks, off) // released meanwhile
		}
	}
	return out, findings
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Repairer reconciles one allocator's bitmap with the Services, as
// kube-apiserver's repair controllers: it reads the bitmap, then lists the
// Services, then writes the rebuilt bitmap only if nothing was allocated
// or released in between (compare-and-swap; it retries otherwise).
type Repairer struct {
	alloc *Allocator
	list  func(context.Context) ([]Use, error)
	log   *slog.Logger
	// Report receives each finding (an Event, a log line); nil logs only.
	Report func(Finding)
	leaks  map[int]int
}

// NewRepairer repairs alloc from what list returns.
func NewRepairer(alloc *Allocator, list func(context.Context) ([]Use, error), log *slog.Logger) *Repairer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Repairer{alloc: alloc, list: list, log: log, leaks: map[int]int{}}
}

// RunOnce repairs once; it returns what it found.
func (r *Repairer) RunOnce(ctx context.Context) ([]Finding, error) {
	var err error
	for range 10 {
		var findings []Finding
		findings, err = r.try(ctx)
		if err == nil {
			for _, f := range findings {
				r.log.Warn("service allocation repair", "range", r.alloc.r.String(), "kind", f.Kind, "finding", f.String())
				if r.Report != nil {
					r.Report(f)
				}
			}
			return findings, nil
		}
		if !apierrors.IsConflict(err) {
			break
		}
	}
	return nil, fmt.Errorf("repairing %s: %w", r.alloc.key, err)
}

func (r *Repairer) try(ctx context.Context) ([]Finding, error) {
	stored, rv, err := r.alloc.Snapshot(ctx)
	mismatch := errors.Is(err, ErrRangeMismatch)
	if mismatch {
		// The range changed: rebuild from the Services alone.
		r.log.Warn("service allocation range changed; rebuilding it from the services", "key", r.alloc.key, "err", err)
		stored, r.leaks = NewBitmap(r.alloc.r.Size(), nil), map[int]int{}
	} else if err != nil {
		return nil, err
	}
	uses, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	leaks := make(map[int]int, len(r.leaks))
	for k, v := range r.leaks {
		leaks[k] = v
	}
	next, findings := PlanRepair(r.alloc.r, stored, uses, leaks)
	if rv == "" || mismatch || !slices.Equal(next.Data(), stored.Data()) {
		if err := r.alloc.Replace(ctx, next, rv); err != nil {
			return nil, err
		}
	}
	r.leaks = leaks
	return findings, nil
}

// Run repairs every interval until ctx ends; failures are logged and
// retried at the next tick.
func (r *Repairer) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Error("service allocation repair failed", "err", err)
		}
	}
}
