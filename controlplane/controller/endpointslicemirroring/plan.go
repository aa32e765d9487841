// Package endpointslicemirroring is kube-controller-manager's
// endpointslice-mirroring controller: the Endpoints a user writes for a
// Service without a selector are copied into EndpointSlices (managed-by
// endpointslicemirroring-controller.k8s.io), which is what service proxies
// read.
package endpointslicemirroring

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// ManagedBy is the managed-by label value of the mirrored slices.
	ManagedBy = "endpointslicemirroring-controller.k8s.io"
	// SkipMirrorLabel set to "true" on an Endpoints object opts it out.
	SkipMirrorLabel = "endpointslice.kubernetes.io/skip-mirror"
	// maxAddresses is the most addresses mirrored from one Endpoints, as
	// upstream (the rest are dropped).
	maxAddresses = 1000
)

// PlanResult is what to write.
type PlanResult struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
}

// Mirrored reports whether ep is mirrored for svc (nil: no Service).
func Mirrored(svc *corev1.Service, ep *corev1.Endpoints) bool {
	return svc != nil && ep != nil && svc.Spec.Selector == nil && ep.Labels[SkipMirrorLabel] != "true"
}

// Desired are the slices mirroring ep for svc: one per address type and
// port set of its subsets, named after the Service and a hash of both so a
// sync finds them again.
func Desired(svc *corev1.Service, ep *corev1.Endpoints) []*discoveryv1.EndpointSlice {
	byKey := map[string]*discoveryv1.EndpointSlice{}
	var keys []string
	budget := maxAddresses
	for _, ss := range ep.Subsets {
		ports := make([]discoveryv1.EndpointPort, 0, len(ss.Ports))
		for _, p := range ss.Ports {
			ports = append(ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port),
				Protocol: ptr.To(protocol(p.Protocol)), AppProtocol: p.AppProtocol})
		}
		sort.Slice(ports, func(i, j int) bool { return *ports[i].Name < *ports[j].Name })
		add := func(a corev1.EndpointAddress, ready bool) {
			ip, err := netip.ParseAddr(a.IP)
			if err != nil || budget == 0 {
				return
			}
			budget--
			at := discoveryv1.AddressTypeIPv4
			if ip.Is6() && !ip.Is4In6() {
				at = discoveryv1.AddressTypeIPv6
			}
			key := string(at) + "/" + portsKey(ports)
			s := byKey[key]
			if s == nil {
				s = newSlice(svc, ep, at, ports, key)
				byKey[key] = s
				keys = append(keys, key)
			}
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses: []string{ip.String()}, Hostname: ptrOrNil(a.Hostname), NodeName: a.NodeName, TargetRef: a.TargetRef,
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
			})
		}
		for _, a := range ss.Addresses {
			add(a, true)
		}
		for _, a := range ss.NotReadyAddresses {
			add(a, false)
		}
	}
	sort.Strings(keys)
	out := make([]*discoveryv1.EndpointSlice, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

// Plan compares the desired slices with the existing mirrored ones by name.
func Plan(desired, existing []*discoveryv1.EndpointSlice) PlanResult {
	var plan PlanResult
	have := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		have[s.Name] = s
	}
	for _, want := range desired {
		cur := have[want.Name]
		delete(have, want.Name)
		switch {
		case cur == nil:
			plan.Create = append(plan.Create, want)
		case !apiequality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) || !apiequality.Semantic.DeepEqual(cur.Ports, want.Ports) ||
			!apiequality.Semantic.DeepEqual(cur.Labels, want.Labels) || cur.AddressType != want.AddressType:
			upd := cur.DeepCopy()
			upd.Endpoints, upd.Ports, upd.Labels = want.Endpoints, want.Ports, want.Labels
			plan.Update = append(plan.Update, upd)
		}
	}
	for _, s := range existing {
		if _, left := have[s.Name]; left {
			plan.Delete = append(plan.Delete, s)
		}
	}
	return plan
}

func newSlice(svc *corev1.Service, ep *corev1.Endpoints, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, key string) *discoveryv1.EndpointSlice {
	labels := map[string]string{}
	for k, v := range ep.Labels {
		labels[k] = v
	}
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = ManagedBy
	h := sha256.Sum256([]byte(key))
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name + "-" + hex.EncodeToString(h[:])[:10], Namespace: svc.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		AddressType: at,
		Ports:       ports,
	}
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(*p.Name + ":" + strconv.Itoa(int(*p.Port)) + "/" + string(*p.Protocol) + ",")
	}
	return b.String()
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func ptrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
