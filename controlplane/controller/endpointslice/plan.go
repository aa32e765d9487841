// Package endpointslice is upstream's endpointslice controller: for every
// Service with a selector it keeps EndpointSlices (label
// endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io)
// listing the matching pods' addresses, per address family and per set of
// resolved ports, at most MaxEndpointsPerSlice each, with ready, serving
// and terminating conditions from pod readiness and deletion,
// publishNotReadyAddresses, named target ports resolved per pod,
// hostname (pods whose subdomain is the Service), node name and zone.
// Topology hints are left out.
//
// Plan is pure (Service, pods, nodes' zones, existing slices → creates,
// updates, deletes); the controller applies it.
package endpointslice

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/controller"
)

// Upstream's constants.
const (
	// ManagedBy is this controller's value of discoveryv1.LabelManagedBy.
	ManagedBy = "endpointslice-controller.k8s.io"
	// MaxEndpointsPerSlice is kube-controller-manager's
	// --max-endpoints-per-slice default.
	MaxEndpointsPerSlice = 100
	// HeadlessLabel marks the slices of a headless Service.
	HeadlessLabel = "service.kubernetes.io/headless"
)

// PlanResult is what to write.
type PlanResult struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
}

// Empty reports whether nothing needs writing.
func (p PlanResult) Empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// group is the endpoints sharing one address type and one port list.
type group struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   []discoveryv1.Endpoint
}

func (g *group) key() string { return string(g.addressType) + "/" + portsKey(g.ports) }

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s:%d:%s:%s;", deref(p.Name), deref(p.Port), deref(p.Protocol), deref(p.AppProtocol))
	}
	return b.String()
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Plan computes the slices svc should have from its pods (those selected,
// any state; the plan filters them), zones (node name → zone label) and
// the existing slices this controller manages for svc. Existing slices are
// reused for the endpoints of their address type and ports; only slices
// whose content changed are updated. The slices written carry trigger (see
// TriggerTimes) as endpoints.kubernetes.io/last-change-trigger-time, or
// lose that annotation when it is zero.
func Plan(svc *corev1.Service, pods []*corev1.Pod, zones map[string]string, existing []*discoveryv1.EndpointSlice, trigger time.Time) PlanResult {
	groups := desiredGroups(svc, pods, zones)
	byKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range slices.SortedFunc(slices.Values(existing), func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) }) {
		k := string(s.AddressType) + "/" + portsKey(s.Ports)
		byKey[k] = append(byKey[k], s)
	}
	var res PlanResult
	for _, g := range groups {
		olds := byKey[g.key()]
		delete(byKey, g.key())
		for i := 0; i < len(g.endpoints) || (i == 0 && len(g.endpoints) == 0); i += MaxEndpointsPerSlice {
			chunk := g.endpoints[i:min(i+MaxEndpointsPerSlice, len(g.endpoints))]
			want := newSlice(svc, g.addressType, g.ports, chunk)
			if len(olds) == 0 {
				res.Create = append(res.Create, want)
				continue
			}
			old := olds[0]
			olds = olds[1:]
			if !apiequality.Semantic.DeepEqual(old.Endpoints, want.Endpoints) || !apiequality.Semantic.DeepEqual(old.Labels, want.Labels) ||
				!apiequality.Semantic.DeepEqual(old.OwnerReferences, want.OwnerReferences) {
				upd := old.DeepCopy()
				upd.Endpoints, upd.Labels, upd.OwnerReferences = want.Endpoints, want.Labels, want.OwnerReferences
				res.Update = append(res.Update, upd)
			}
		}
		res.Delete = append(res.Delete, olds...)
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		res.Delete = append(res.Delete, byKey[k]...)
	}
	for _, s := range slices.Concat(res.Create, res.Update) {
		setTriggerTime(s, trigger)
	}
	return res
}

// setTriggerTime sets or clears the last-change-trigger-time annotation.
func setTriggerTime(s *discoveryv1.EndpointSlice, trigger time.Time) {
	if trigger.IsZero() {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[corev1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
}

// desiredGroups groups the endpoints of svc's pods. A Service with no pod
// still gets one empty slice (no ports) of its primary family, as
// upstream's placeholder.
func desiredGroups(svc *corev1.Service, pods []*corev1.Pod, zones map[string]string) []*group {
	families := addressTypes(svc)
	var groups []*group
	index := map[string]*group{}
	sorted := slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, pod := range sorted {
		if !inEndpoints(pod) {
			continue
		}
		ports := endpointPorts(svc, pod)
		for _, at := range families {
			ip := podIP(pod, at)
			if ip == "" {
				continue
			}
			g := &group{addressType: at, ports: ports}
			if have, ok := index[g.key()]; ok {
				g = have
			} else {
				index[g.key()] = g
				groups = append(groups, g)
			}
			g.endpoints = append(g.endpoints, podEndpoint(svc, pod, ip, zones))
		}
	}
	if len(groups) == 0 {
		groups = append(groups, &group{addressType: families[0], ports: []discoveryv1.EndpointPort{}})
	}
	return groups
}

// addressTypes are the slice address types of svc's IP families.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		if f == corev1.IPv6Protocol {
			out = append(out, discoveryv1.AddressTypeIPv6)
		} else {
			out = append(out, discoveryv1.AddressTypeIPv4)
		}
	}
	if len(out) == 0 {
		out = []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return out
}

// inEndpoints: a pod with an IP that has not finished (terminating pods
// stay, marked terminating).
func inEndpoints(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return pod.Status.PodIP != "" || len(pod.Status.PodIPs) > 0
}

func podIP(pod *corev1.Pod, at discoveryv1.AddressType) string {
	ips := []string{pod.Status.PodIP}
	for _, p := range pod.Status.PodIPs {
		ips = append(ips, p.IP)
	}
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		if a.Unmap().Is4() == (at == discoveryv1.AddressTypeIPv4) {
			return a.Unmap().String()
		}
	}
	return ""
}

func podEndpoint(svc *corev1.Service, pod *corev1.Pod, ip string, zones map[string]string) discoveryv1.Endpoint {
	serving := controller.PodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if n := pod.Spec.NodeName; n != "" {
		ep.NodeName = &n
		if z := zones[n]; z != "" {
			ep.Zone = &z
		}
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		h := pod.Spec.Hostname
		ep.Hostname = &h
	}
	return ep
}

// endpointPorts resolves svc's ports for pod: a named target port is the
// pod's container port of that name and protocol (ports it lacks are left
// out); a number is itself; none is the service port.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for _, sp := range svc.Spec.Ports {
		n, ok := controller.FindPort(pod, sp)
		if !ok {
			continue
		}
		out = append(out, endpointPort(sp, n))
	}
	return out
}

func endpointPort(sp corev1.ServicePort, n int32) discoveryv1.EndpointPort {
	name, proto := sp.Name, sp.Protocol
	p := discoveryv1.EndpointPort{Name: &name, Port: &n, Protocol: &proto}
	if sp.AppProtocol != nil {
		ap := *sp.AppProtocol
		p.AppProtocol = &ap
	}
	return p
}

// newSlice is a slice of svc (named by the apiserver from
// "<service>-"), owned by it.
func newSlice(svc *corev1.Service, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	labels := map[string]string{}
	for k, v := range svc.Labels {
		labels[k] = v
	}
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = ManagedBy
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		labels[HeadlessLabel] = ""
	}
	yes := true
	prefix := svc.Name
	if len(prefix) > 58 {
		prefix = prefix[:58]
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: prefix + "-", Namespace: svc.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		AddressType: at,
		Ports:       ports,
		Endpoints:   append([]discoveryv1.Endpoint{}, eps...),
	}
}
