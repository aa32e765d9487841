package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"berth/controlplane/registry/core/service/allocator"
)

// OrphanGrace is how old an IPAddress of this allocator whose Service does
// not hold it must be before the repair deletes it (a create in flight has
// its IPAddress before its Service is written), as upstream's; the
// Repairer's default.
const OrphanGrace = 60 * time.Second

// Finding kinds of the IPAddress repair beyond the allocator's.
const (
	// FindingWrongReference: the address's IPAddress names another object
	// (not a Service, or a Service that does not hold it); recreated for
	// the Service that holds it.
	FindingWrongReference = "WrongReference"
)

// RepairPlan is what a repair writes: IPAddresses to delete (first), then
// to create.
type RepairPlan struct {
	Delete []string
	Create []*networkingv1.IPAddress
}

// Use is one cluster IP held by one Service.
type Use struct {
	Service *v1.Service
	IP      string
}

// PlanRepair reconciles the IPAddresses with the cluster IPs Services
// hold, as kube-apiserver's RepairIPAddress: a held IP without an
// IPAddress gets one (Repaired); one referring to nothing or to a Service
// not holding it is recreated (WrongReference); one held by several
// Services is reported (Duplicate); an IP in no ServiceCIDR is reported
// (OutOfRange). An IPAddress of this allocator that no Service holds is
// deleted once older than grace (Leaked). Pure.
func PlanRepair(uses []Use, ips []networkingv1.IPAddress, cidrs []networkingv1.ServiceCIDR, now time.Time, grace time.Duration) (RepairPlan, []allocator.Finding) {
	var plan RepairPlan
	var findings []allocator.Finding
	ranges := append(Ranges(cidrs, v1.IPv4Protocol), Ranges(cidrs, v1.IPv6Protocol)...)
	byName := make(map[string]*networkingv1.IPAddress, len(ips))
	for i := range ips {
		byName[ips[i].Name] = &ips[i]
	}
	holders := map[string][]string{}
	holderSvc := map[string]*v1.Service{}
	var order []string
	for _, u := range uses {
		addr, err := netip.ParseAddr(u.IP)
		if err != nil {
			continue
		}
		name := addr.Unmap().String()
		key := u.Service.Namespace + "/" + u.Service.Name
		if _, ok := holders[name]; !ok {
			order = append(order, name)
			holderSvc[name] = u.Service
		}
		if !slices.Contains(holders[name], key) {
			holders[name] = append(holders[name], key)
		}
	}
	for _, name := range order {
		addr := netip.MustParseAddr(name)
		svc, h := holderSvc[name], holders[name]
		if _, ok := containing(ranges, addr, false); !ok {
			findings = append(findings, allocator.Finding{Kind: allocator.FindingOutOfRange, Item: name, Services: h})
			continue
		}
		ip, ok := byName[name]
		switch {
		case !ok:
			findings = append(findings, allocator.Finding{Kind: allocator.FindingRepaired, Item: name, Services: h})
			plan.Create = append(plan.Create, NewIPAddress(name, svc))
		case !refersTo(ip, h):
			findings = append(findings, allocator.Finding{Kind: FindingWrongReference, Item: name, Services: h})
			plan.Delete = append(plan.Delete, name)
			plan.Create = append(plan.Create, NewIPAddress(name, svc))
		}
		if len(h) > 1 {
			findings = append(findings, allocator.Finding{Kind: allocator.FindingDuplicate, Item: name, Services: h})
		}
	}
	for i := range ips {
		ip := &ips[i]
		if _, held := holders[ip.Name]; held || ip.Labels[networkingv1.LabelManagedBy] != ControllerName {
			continue
		}
		if now.Sub(ip.CreationTimestamp.Time) < grace {
			continue
		}
		findings = append(findings, allocator.Finding{Kind: allocator.FindingLeaked, Item: ip.Name})
		plan.Delete = append(plan.Delete, ip.Name)
	}
	return plan, findings
}

// refersTo reports whether ip's parent is one of the Services (keys).
func refersTo(ip *networkingv1.IPAddress, keys []string) bool {
	ref := ip.Spec.ParentRef
	if ref == nil || ref.Group != "" || ref.Resource != "services" {
		return false
	}
	return slices.Contains(keys, ref.Namespace+"/"+ref.Name)
}

// Repairer runs PlanRepair against a store.
type Repairer struct {
	store Store
	list  func(context.Context) ([]Use, error)
	log   *slog.Logger
	now   func() time.Time
	// Report receives each finding (an Event, a log line); nil logs only.
	Report func(allocator.Finding)
	// Grace is how old an unheld IPAddress must be to be deleted
	// (OrphanGrace unless set).
	Grace time.Duration
}

// NewRepairer repairs store's IPAddresses from what list returns.
func NewRepairer(store Store, list func(context.Context) ([]Use, error), log *slog.Logger) *Repairer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Repairer{store: store, list: list, log: log, now: time.Now, Grace: OrphanGrace}
}

// RunOnce repairs once; it returns what it found. The IPAddresses are
// read before the Services, so an IP allocated in between is seen held
// and not taken for a leak.
func (r *Repairer) RunOnce(ctx context.Context) ([]allocator.Finding, error) {
	ips, err := r.store.ListIPAddresses(ctx)
	if err != nil {
		return nil, fmt.Errorf("repairing cluster IPs: %w", err)
	}
	cidrs, err := r.store.ListServiceCIDRs(ctx)
	if err != nil {
		return nil, fmt.Errorf("repairing cluster IPs: %w", err)
	}
	uses, err := r.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("repairing cluster IPs: %w", err)
	}
	plan, findings := PlanRepair(uses, ips, cidrs, r.now(), r.Grace)
	var errs []error
	for _, name := range plan.Delete {
		if err := r.store.DeleteIPAddress(ctx, name); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	for _, ip := range plan.Create {
		if err := r.store.CreateIPAddress(ctx, ip); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, err)
		}
	}
	for _, f := range findings {
		r.log.Warn("cluster IP repair", "kind", f.Kind, "ip", f.Item, "services", f.Services)
		if r.Report != nil {
			r.Report(f)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return findings, fmt.Errorf("repairing cluster IPs: %w", err)
	}
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
			r.log.Error("cluster IP repair failed", "err", err)
		}
	}
}
