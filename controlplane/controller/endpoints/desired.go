// Package endpoints is upstream's legacy endpoints controller: for every
// Service with a selector it keeps the core/v1 Endpoints of the same name
// listing the matching pods' addresses (ready ones in addresses, the
// others in notReadyAddresses; terminating pods only with
// publishNotReadyAddresses), grouped into subsets by their resolved
// ports, as upstream repacks them. Desired is pure; the controller
// writes what differs.
package endpoints

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth/controlplane/controller"
)

// HeadlessLabel marks the Endpoints of a headless Service.
const HeadlessLabel = "service.kubernetes.io/headless"

// Desired is the subsets and labels svc's Endpoints should have.
func Desired(svc *corev1.Service, pods []*corev1.Pod) ([]corev1.EndpointSubset, map[string]string) {
	labels := maps.Clone(svc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		labels[HeadlessLabel] = ""
	}
	type subset struct {
		ports           []corev1.EndpointPort
		ready, notReady []corev1.EndpointAddress
	}
	byPorts := map[string]*subset{}
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
			(pod.DeletionTimestamp != nil && !svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		ip := primaryIP(svc, pod)
		if ip == "" {
			continue
		}
		addr := corev1.EndpointAddress{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if n := pod.Spec.NodeName; n != "" {
			addr.NodeName = &n
		}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
			addr.Hostname = pod.Spec.Hostname
		}
		ports := []corev1.EndpointPort{}
		for _, sp := range svc.Spec.Ports {
			if n, ok := controller.FindPort(pod, sp); ok {
				ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: n, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
			}
		}
		if len(ports) == 0 && !(len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone) {
			continue // no port resolved: not an endpoint (a headless Service without ports lists addresses alone)
		}
		slices.SortFunc(ports, func(a, b corev1.EndpointPort) int { return cmp.Compare(a.Name, b.Name) })
		key := portsKey(ports)
		s := byPorts[key]
		if s == nil {
			s = &subset{ports: ports}
			byPorts[key] = s
		}
		if svc.Spec.PublishNotReadyAddresses || controller.PodReady(pod) {
			s.ready = append(s.ready, addr)
		} else {
			s.notReady = append(s.notReady, addr)
		}
	}
	var out []corev1.EndpointSubset
	for _, k := range slices.Sorted(maps.Keys(byPorts)) {
		s := byPorts[k]
		sortAddrs(s.ready)
		sortAddrs(s.notReady)
		es := corev1.EndpointSubset{Addresses: s.ready, NotReadyAddresses: s.notReady}
		if len(s.ports) > 0 {
			es.Ports = s.ports
		}
		out = append(out, es)
	}
	return out, labels
}

func portsKey(ports []corev1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s:%d:%s;", p.Name, p.Port, p.Protocol)
	}
	return b.String()
}

func sortAddrs(a []corev1.EndpointAddress) {
	slices.SortFunc(a, func(x, y corev1.EndpointAddress) int {
		return cmp.Or(cmp.Compare(x.IP, y.IP), cmp.Compare(x.TargetRef.Name, y.TargetRef.Name))
	})
}

// primaryIP is the pod's IP of the Service's primary family.
func primaryIP(svc *corev1.Service, pod *corev1.Pod) string {
	want6 := len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	ips := []string{pod.Status.PodIP}
	for _, p := range pod.Status.PodIPs {
		ips = append(ips, p.IP)
	}
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().Is6() == want6 {
			return a.Unmap().String()
		}
	}
	return ""
}
