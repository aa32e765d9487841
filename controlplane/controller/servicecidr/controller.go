// Package servicecidr is berth's ServiceCIDR controller, as
// kube-controller-manager's service-cidr-controller: every ServiceCIDR gets
// the protection finalizer and a Ready condition; one being deleted keeps
// the finalizer (Ready False, reason Terminating) while an IPAddress of the
// allocator lies in it and in no other ServiceCIDR, so a range cannot go
// away under the Services using it.
//
// Decide is the pure decision; Controller applies it.
package servicecidr

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	networkinglisters "k8s.io/client-go/listers/networking/v1"

	"berth/controlplane/controller"
	"berth/controlplane/registry/core/service/ipallocator"
)

// Name is the controller's name (in the manager, logs and the queue).
const Name = "service-cidr-controller"

// Finalizer protects a ServiceCIDR in use, as upstream's.
const Finalizer = "networking.k8s.io/service-cidr-finalizer"

// DeletionGrace is how long after its deletion a ServiceCIDR no address
// holds keeps its finalizer, so every allocator has seen it terminating
// and allocates no more from it (upstream's).
const DeletionGrace = 10 * time.Second

// Messages of the Ready condition, as upstream's.
const (
	readyMessage       = "Kubernetes Service CIDR is ready"
	terminatingMessage = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
)

// Decision is what to do with one ServiceCIDR.
type Decision struct {
	AddFinalizer, RemoveFinalizer bool
	// Ready is the Ready condition it should have (nil: leave it).
	Ready *metav1.Condition
	// After: decide again then (0: no need).
	After time.Duration
}

// Decide decides for c given every ServiceCIDR and IPAddress. Pure.
func Decide(c *networkingv1.ServiceCIDR, all []*networkingv1.ServiceCIDR, ips []*networkingv1.IPAddress, now time.Time) Decision {
	if c.DeletionTimestamp == nil {
		return Decision{AddFinalizer: !slices.Contains(c.Finalizers, Finalizer),
			Ready: &metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue, Message: readyMessage}}
	}
	if blockingIP(c, all, ips) != "" {
		return Decision{Ready: &metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionFalse,
			Reason: networkingv1.ServiceCIDRReasonTerminating, Message: terminatingMessage}}
	}
	if left := DeletionGrace - now.Sub(c.DeletionTimestamp.Time); left > 0 {
		return Decision{After: left}
	}
	return Decision{RemoveFinalizer: slices.Contains(c.Finalizers, Finalizer)}
}

// blockingIP is an allocated address only c holds ("" when none). When
// another ServiceCIDR covers each of c's prefixes, none is.
func blockingIP(c *networkingv1.ServiceCIDR, all []*networkingv1.ServiceCIDR, ips []*networkingv1.IPAddress) string {
	covered := true
	for _, s := range c.Spec.CIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		if !slices.ContainsFunc(all, func(o *networkingv1.ServiceCIDR) bool { return o.Name != c.Name && containsPrefix(o, p) }) {
			covered = false
		}
	}
	if covered {
		return ""
	}
	others := make([]networkingv1.ServiceCIDR, 0, len(all))
	for _, o := range all {
		if o.Name != c.Name {
			others = append(others, *o)
		}
	}
	for _, family := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
		mine := ipallocator.Ranges([]networkingv1.ServiceCIDR{*c}, family)
		theirs := ipallocator.Ranges(others, family)
		for _, ip := range ips {
			if ip.Labels[networkingv1.LabelManagedBy] != ipallocator.ControllerName {
				continue
			}
			a, err := netip.ParseAddr(ip.Name)
			if err != nil {
				continue
			}
			if inAny(mine, a) && !inAny(theirs, a) {
				return ip.Name
			}
		}
	}
	return ""
}

func inAny(rs []ipallocator.Range, a netip.Addr) bool {
	return slices.ContainsFunc(rs, func(r ipallocator.Range) bool { return r.Contains(a) })
}

// containsPrefix reports whether one of o's CIDRs contains p.
func containsPrefix(o *networkingv1.ServiceCIDR, p netip.Prefix) bool {
	for _, s := range o.Spec.CIDRs {
		q, err := netip.ParsePrefix(s)
		if err == nil && q.Bits() <= p.Bits() && q.Masked().Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller keeps the ServiceCIDRs' finalizer and Ready condition.
type Controller struct {
	cfg   Config
	cidrs networkinglisters.ServiceCIDRLister
	ips   networkinglisters.IPAddressLister
	queue *controller.Queue
}

// New validates cfg and registers the ServiceCIDRs and IPAddresses
// informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 1); err != nil {
		return nil, err
	}
	cinf := cfg.Informers.Networking().V1().ServiceCIDRs()
	iinf := cfg.Informers.Networking().V1().IPAddresses()
	c := &Controller{cfg: cfg, cidrs: cinf.Lister(), ips: iinf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	if err := c.queue.Watch(cinf.Informer(), controller.On(controller.AllEvents, c.queue.Enqueue)); err != nil {
		return nil, err
	}
	// A released address may unblock a terminating ServiceCIDR.
	released := func(any) {
		all, _ := c.cidrs.List(labels.Everything())
		for _, sc := range all {
			if sc.DeletionTimestamp != nil {
				c.queue.Add(sc.Name)
			}
		}
	}
	if err := c.queue.Watch(iinf.Informer(), controller.On(controller.Deleted, released)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs ServiceCIDRs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	sc, err := c.cidrs.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	all, err := c.cidrs.List(labels.Everything())
	if err != nil {
		return err
	}
	ips, err := c.ips.List(labels.Everything())
	if err != nil {
		return err
	}
	d := Decide(sc, all, ips, c.cfg.Clock.Now())
	client := c.cfg.Client.NetworkingV1().ServiceCIDRs()
	if d.AddFinalizer || d.RemoveFinalizer {
		field := "finalizers"
		if d.RemoveFinalizer {
			field = "$deleteFromPrimitiveList/finalizers"
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{field: []string{Finalizer}}})
		patched, err := client.Patch(ctx, sc.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("patching the finalizer of ServiceCIDR %s: %w", sc.Name, err)
		}
		sc = patched
	}
	if d.Ready != nil {
		cur := meta.FindStatusCondition(sc.Status.Conditions, d.Ready.Type)
		if cur == nil || cur.Status != d.Ready.Status || cur.Reason != d.Ready.Reason || cur.Message != d.Ready.Message {
			fresh := sc.DeepCopy()
			meta.SetStatusCondition(&fresh.Status.Conditions, *d.Ready)
			if _, err := client.UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("updating the status of ServiceCIDR %s: %w", sc.Name, err)
			}
		}
	}
	if d.After > 0 {
		c.queue.AddAfter(key, d.After)
	}
	return nil
}
