package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"berth/controlplane/registry/core/service/allocator"
	"berth/controlplane/registry/core/service/ipallocator"
)

// Allocators give Services their cluster IPs (single stack, the family of
// the IP allocator) and node ports, as kube-apiserver's service REST does: the
// generic Store's BeginCreate/BeginUpdate hooks take what a Service needs
// before it is written and give it back if the write fails; AfterDelete
// gives back what a deleted Service held.
type Allocators struct {
	IPs   ClusterIPAllocator
	Ports *allocator.Allocator
	// DeleteEndpoints removes the deleted Service's Endpoints, as upstream
	// does (nil: not done).
	DeleteEndpoints func(ctx context.Context, namespace, name string) error
	Log             *slog.Logger
}

// ClusterIPAllocator hands out the cluster IPs of one family
// (ipallocator.Allocator: one IPAddress object per IP).
type ClusterIPAllocator interface {
	// Family is the IP family served.
	Family() v1.IPFamily
	// Allocate takes the requested IPs and n more (returned) for svc, all
	// or nothing: a requested IP taken or out of range fails with an
	// *allocator.ItemError; none left: allocator.ErrFull.
	Allocate(ctx context.Context, svc *v1.Service, requested []string, n int, dryRun bool) ([]string, error)
	// Release gives IPs back.
	Release(ctx context.Context, ips []string) error
}

// family is the cluster's (the IP allocator's) family.
func (al *Allocators) family() v1.IPFamily { return al.IPs.Family() }

// held is what one operation took and what it gives back on success.
type held struct {
	ips, ports               []string
	releaseIPs, releasePorts []string
}

func (al *Allocators) finish(h *held, svc *v1.Service, dryRun bool) genericregistry.FinishFunc {
	return func(ctx context.Context, success bool) {
		if dryRun {
			return
		}
		if success {
			al.release(svc, h.releaseIPs, h.releasePorts)
		} else {
			al.release(svc, h.ips, h.ports)
		}
	}
}

// release gives items back; a failure leaves them to the repair.
func (al *Allocators) release(svc *v1.Service, ips, ports []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := al.IPs.Release(ctx, ips); err != nil {
		al.logger().Error("releasing cluster IPs; the repair will", "service", svc.Namespace+"/"+svc.Name, "ips", ips, "err", err)
	}
	if err := al.Ports.Release(ctx, ports); err != nil {
		al.logger().Error("releasing node ports; the repair will", "service", svc.Namespace+"/"+svc.Name, "ports", ports, "err", err)
	}
}

func (al *Allocators) logger() *slog.Logger {
	if al.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return al.Log
}

// BeginCreate is the Store's BeginCreate hook.
func (al *Allocators) BeginCreate(ctx context.Context, obj runtime.Object, opts *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
	svc := obj.(*v1.Service)
	dryRun := len(opts.DryRun) > 0
	SyncClusterIPs(svc)
	if err := al.initIPFamilies(svc, nil); err != nil {
		return nil, err
	}
	h := &held{}
	if err := al.allocClusterIP(ctx, svc, h, dryRun); err != nil {
		return nil, err
	}
	if err := al.allocNodePorts(ctx, svc, nil, h, dryRun); err != nil {
		al.finish(h, svc, dryRun)(ctx, false)
		return nil, err
	}
	return al.finish(h, svc, dryRun), nil
}

// BeginUpdate is the Store's BeginUpdate hook: it allocates what a type
// change needs (a cluster IP leaving ExternalName, node ports becoming
// NodePort or LoadBalancer, new node ports) and, once the update
// succeeds, gives back what the service no longer holds.
func (al *Allocators) BeginUpdate(ctx context.Context, obj, oldObj runtime.Object, opts *metav1.UpdateOptions) (genericregistry.FinishFunc, error) {
	svc, old := obj.(*v1.Service), oldObj.(*v1.Service)
	dryRun := len(opts.DryRun) > 0
	// As PrepareForUpdate (which runs later): the allocated values a client
	// left out are kept, the type's fields dropped.
	SyncClusterIPs(svc)
	keepAllocatedValues(svc, old)
	dropTypeDependentFields(svc, old)
	if !needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if err := al.initIPFamilies(svc, old); err != nil {
		return nil, err
	}
	h := &held{}
	oldIPs := allocatedIPs(old)
	switch {
	case old.Spec.Type == v1.ServiceTypeExternalName && svc.Spec.Type != v1.ServiceTypeExternalName:
		if err := al.allocClusterIP(ctx, svc, h, dryRun); err != nil {
			return nil, err
		}
	case svc.Spec.Type == v1.ServiceTypeExternalName:
		h.releaseIPs = oldIPs
	}
	if err := al.allocNodePorts(ctx, svc, old, h, dryRun); err != nil {
		al.finish(h, svc, dryRun)(ctx, false)
		return nil, err
	}
	newPorts := nodePortsOf(svc)
	for _, p := range nodePortsOf(old) {
		if !slices.Contains(newPorts, p) {
			h.releasePorts = append(h.releasePorts, p)
		}
	}
	return al.finish(h, svc, dryRun), nil
}

// AfterDelete is the Store's AfterDelete hook.
func (al *Allocators) AfterDelete(obj runtime.Object, opts *metav1.DeleteOptions) {
	svc := obj.(*v1.Service)
	if opts != nil && len(opts.DryRun) > 0 {
		return
	}
	if al.DeleteEndpoints != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := al.DeleteEndpoints(ctx, svc.Namespace, svc.Name)
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			al.logger().Error("deleting a deleted service's endpoints", "service", svc.Namespace+"/"+svc.Name, "err", err)
		}
	}
	al.release(svc, allocatedIPs(svc), nodePortsOf(svc))
}

// allocatedIPs are the cluster IPs a stored Service holds.
func allocatedIPs(svc *v1.Service) []string {
	if svc.Spec.Type == v1.ServiceTypeExternalName {
		return nil
	}
	var out []string
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != "" && ip != v1.ClusterIPNone {
			out = append(out, ip)
		}
	}
	return out
}

// nodePortsOf are the node ports (and health check node port) a Service holds.
func nodePortsOf(svc *v1.Service) []string {
	var out []string
	add := func(p int32) {
		if s := strconv.Itoa(int(p)); p != 0 && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if needsNodePorts(svc) {
		for _, p := range svc.Spec.Ports {
			add(p.NodePort)
		}
	}
	if needsHealthCheck(svc) {
		add(svc.Spec.HealthCheckNodePort)
	}
	return out
}

// needsHealthCheck: a LoadBalancer with externalTrafficPolicy Local gets a
// health check node port.
func needsHealthCheck(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal
}

// initIPFamilies fills ipFamilyPolicy and ipFamilies as a single-stack
// kube-apiserver does and refuses what the cluster cannot serve.
func (al *Allocators) initIPFamilies(svc, old *v1.Service) error {
	if svc.Spec.Type == v1.ServiceTypeExternalName {
		return nil
	}
	fam := al.family()
	headlessNoSelector := svc.Spec.ClusterIP == v1.ClusterIPNone && len(svc.Spec.Selector) == 0
	if svc.Spec.IPFamilyPolicy == nil {
		policy := v1.IPFamilyPolicySingleStack
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			policy = *old.Spec.IPFamilyPolicy
		case headlessNoSelector:
			policy = v1.IPFamilyPolicyRequireDualStack
		}
		svc.Spec.IPFamilyPolicy = &policy
	}
	policy := *svc.Spec.IPFamilyPolicy
	var errs field.ErrorList
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	if policy == v1.IPFamilyPolicySingleStack {
		if len(svc.Spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(svc.Spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	for i, ip := range svc.Spec.ClusterIPs {
		if ip == v1.ClusterIPNone {
			break
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			break // validation names it
		}
		f := v1.IPv4Protocol
		if a.Unmap().Is6() {
			f = v1.IPv6Protocol
		}
		if i >= len(svc.Spec.IPFamilies) {
			if f != fam {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), svc.Spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", f)))
			} else {
				svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, f)
			}
		}
	}
	if len(errs) > 0 {
		return invalid(svc, errs)
	}
	if headlessNoSelector {
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []v1.IPFamily{fam}
		}
		if len(svc.Spec.IPFamilies) < 2 && policy != v1.IPFamilyPolicySingleStack {
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, otherFamily(svc.Spec.IPFamilies[0]))
		}
		return nil
	}
	if policy == v1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(policyPath, policy, "this cluster is not configured for dual-stack services"))
	}
	for i, f := range svc.Spec.IPFamilies {
		if f != fam {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), f, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return invalid(svc, errs)
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []v1.IPFamily{fam}
	}
	return nil
}

func otherFamily(f v1.IPFamily) v1.IPFamily {
	if f == v1.IPv4Protocol {
		return v1.IPv6Protocol
	}
	return v1.IPv4Protocol
}

func invalid(svc *v1.Service, errs field.ErrorList) error {
	return apierrors.NewInvalid(v1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
}

// allocClusterIP takes the requested cluster IP, or the next free one.
func (al *Allocators) allocClusterIP(ctx context.Context, svc *v1.Service, h *held, dryRun bool) error {
	if !needsClusterIP(svc) || svc.Spec.ClusterIP == v1.ClusterIPNone {
		return nil
	}
	var requested []string
	n := 1
	if len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] != "" {
		if _, err := netip.ParseAddr(svc.Spec.ClusterIPs[0]); err != nil {
			return nil // validation names it
		}
		requested, n = svc.Spec.ClusterIPs[:1], 0
	}
	picked, err := al.IPs.Allocate(ctx, svc, requested, n, dryRun)
	var ie *allocator.ItemError
	switch {
	case errors.As(err, &ie):
		return invalid(svc, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIPs,
			fmt.Sprintf("failed to allocate IP %s: %v", ie.Item, ie.Err))})
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %v", err))
	}
	ips := append(append([]string(nil), requested...), picked...)
	svc.Spec.ClusterIPs = ips
	svc.Spec.ClusterIP = ips[0]
	h.ips = ips
	return nil
}

// allocNodePorts takes the node ports of a NodePort or LoadBalancer
// Service (ports with one number share a node port, as upstream) and the
// health check node port, requested ones first; old (an update's stored
// Service) already holds its own.
func (al *Allocators) allocNodePorts(ctx context.Context, svc, old *v1.Service, h *held, dryRun bool) error {
	var oldHeld []string
	if old != nil {
		oldHeld = nodePortsOf(old)
	}
	allocate := needsNodePorts(svc) && (svc.Spec.Type == v1.ServiceTypeNodePort ||
		svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts)
	var requested []string
	firstIndex := map[string]int{}
	request := func(p int32, i int) {
		s := strconv.Itoa(int(p))
		if slices.Contains(oldHeld, s) || slices.Contains(requested, s) {
			return
		}
		requested = append(requested, s)
		firstIndex[s] = i
	}
	byPort := map[int32]int32{}
	if needsNodePorts(svc) {
		for i, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				request(p.NodePort, i)
				if _, ok := byPort[p.Port]; !ok {
					byPort[p.Port] = p.NodePort
				}
			}
		}
	}
	var fresh []*int32
	if needsNodePorts(svc) {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort != 0 {
				continue
			}
			if np, ok := byPort[p.Port]; ok {
				if np > 0 {
					p.NodePort = np
				}
			} else if allocate {
				fresh = append(fresh, &p.NodePort)
				byPort[p.Port] = -1 // placeholder: shares the fresh one
			}
		}
	}
	hc := needsHealthCheck(svc) && !(old != nil && needsHealthCheck(old) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort && old.Spec.HealthCheckNodePort != 0)
	if hc && svc.Spec.HealthCheckNodePort != 0 {
		request(svc.Spec.HealthCheckNodePort, -1)
	}
	n := len(fresh)
	if hc && svc.Spec.HealthCheckNodePort == 0 {
		n++
	}
	if len(requested) == 0 && n == 0 {
		return nil
	}
	picked, err := al.Ports.Allocate(ctx, requested, n, dryRun)
	var ie *allocator.ItemError
	switch {
	case errors.As(err, &ie) && firstIndex[ie.Item] >= 0:
		i := firstIndex[ie.Item]
		return invalid(svc, field.ErrorList{field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), svc.Spec.Ports[i].NodePort, ie.Err.Error())})
	case errors.As(err, &ie):
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %s: %v", ie.Item, ie.Err))
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %v", err))
	}
	h.ports = append(append(h.ports, requested...), picked...)
	numbers := make([]int32, len(picked))
	for i, s := range picked {
		v, _ := strconv.Atoi(s)
		numbers[i] = int32(v)
	}
	for i, np := range fresh {
		*np = numbers[i]
	}
	// Ports sharing a number with a freshly allocated one take it too.
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.NodePort == 0 {
			for _, q := range svc.Spec.Ports {
				if q.Port == p.Port && q.NodePort != 0 {
					p.NodePort = q.NodePort
					break
				}
			}
		}
	}
	if hc && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = numbers[len(numbers)-1]
	}
	return nil
}

// ClusterIPUses lists the cluster IPs Services hold, for the repair.
func ClusterIPUses(svcs []v1.Service) []ipallocator.Use {
	var out []ipallocator.Use
	for i := range svcs {
		for _, ip := range allocatedIPs(&svcs[i]) {
			out = append(out, ipallocator.Use{Service: &svcs[i], IP: ip})
		}
	}
	return out
}

// NodePortUses lists the node ports Services hold, for the repair.
func NodePortUses(svcs []v1.Service) []allocator.Use {
	var out []allocator.Use
	for i := range svcs {
		for _, p := range nodePortsOf(&svcs[i]) {
			out = append(out, allocator.Use{Service: svcs[i].Namespace + "/" + svcs[i].Name, Item: p})
		}
	}
	return out
}
