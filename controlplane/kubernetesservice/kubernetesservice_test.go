package kubernetesservice

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestDesired(t *testing.T) {
	svc := DesiredService("10.43.0.1", 6443)
	if svc.Spec.ClusterIP != "10.43.0.1" || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.IntValue() != 6443 ||
		svc.Spec.Ports[0].Name != "https" || svc.Labels["provider"] != "kubernetes" || svc.Spec.Selector != nil {
		t.Fatalf("service %+v", svc)
	}
	ep := DesiredEndpoints([]string{"192.0.2.1", "192.0.2.2"}, 6443)
	if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 2 || ep.Subsets[0].Ports[0].Port != 6443 ||
		ep.Labels[discoveryv1.LabelSkipMirror] != "true" {
		t.Fatalf("endpoints %+v", ep)
	}
	if DesiredEndpoints(nil, 6443).Subsets != nil {
		t.Fatal("no servers: want no subsets")
	}
	sl := DesiredSlice([]string{"192.0.2.1", "fd00::1"}, 6443, discoveryv1.AddressTypeIPv4)
	if len(sl.Endpoints) != 1 || sl.Endpoints[0].Addresses[0] != "192.0.2.1" || !*sl.Endpoints[0].Conditions.Ready ||
		sl.Labels[discoveryv1.LabelServiceName] != "kubernetes" || *sl.Ports[0].Port != 6443 {
		t.Fatalf("slice %+v", sl)
	}
}
