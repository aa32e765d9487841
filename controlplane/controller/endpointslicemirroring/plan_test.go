package endpointslicemirroring

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDesiredAndPlan(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "u1"}}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", Labels: map[string]string{"app": "db"}},
		Subsets: []corev1.EndpointSubset{{
			Ports:             []corev1.EndpointPort{{Name: "sql", Port: 5432}},
			Addresses:         []corev1.EndpointAddress{{IP: "10.1.2.3", Hostname: "db-0"}, {IP: "fd00::1"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.1.2.4"}},
		}, {
			Ports:     []corev1.EndpointPort{{Name: "sql", Port: 5432}},
			Addresses: []corev1.EndpointAddress{{IP: "10.1.2.5"}, {IP: "not-an-ip"}},
		}}}
	if !Mirrored(svc, ep) {
		t.Fatal("a selectorless Service's Endpoints are not mirrored")
	}
	got := Desired(svc, ep)
	if len(got) != 2 {
		t.Fatalf("%d slices, want one IPv4 and one IPv6", len(got))
	}
	v4 := got[0]
	if v4.AddressType != discoveryv1.AddressTypeIPv4 || len(v4.Endpoints) != 3 || *v4.Ports[0].Port != 5432 || *v4.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("IPv4 slice %+v", v4)
	}
	if e := v4.Endpoints[0]; e.Addresses[0] != "10.1.2.3" || !*e.Conditions.Ready || *e.Hostname != "db-0" {
		t.Errorf("first endpoint %+v", e)
	}
	if e := v4.Endpoints[1]; e.Addresses[0] != "10.1.2.4" || *e.Conditions.Ready {
		t.Errorf("a not-ready address mirrored as %+v", e)
	}
	if v4.Labels[discoveryv1.LabelServiceName] != "db" || v4.Labels[discoveryv1.LabelManagedBy] != ManagedBy || v4.Labels["app"] != "db" ||
		len(v4.OwnerReferences) != 1 || v4.OwnerReferences[0].UID != "u1" {
		t.Errorf("labels %v owners %v", v4.Labels, v4.OwnerReferences)
	}

	// Nothing to do when they match; an address change is an update; a
	// gone port set's slice is deleted.
	if p := Plan(got, got); len(p.Create)+len(p.Update)+len(p.Delete) != 0 {
		t.Errorf("plan over matching slices: %+v", p)
	}
	ep.Subsets = ep.Subsets[1:]
	ep.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "10.2.3.4"}}
	p := Plan(Desired(svc, ep), got)
	if len(p.Create) != 0 || len(p.Update) != 1 || len(p.Delete) != 1 || p.Update[0].Endpoints[0].Addresses[0] != "10.2.3.4" || p.Delete[0].AddressType != discoveryv1.AddressTypeIPv6 {
		t.Errorf("plan after the change: %+v", p)
	}

	// A selector or the skip label: not mirrored.
	if Mirrored(&corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}}}, ep) || Mirrored(nil, ep) {
		t.Error("a Service with a selector, or none, is mirrored")
	}
	ep.Labels[SkipMirrorLabel] = "true"
	if Mirrored(svc, ep) {
		t.Error("skip-mirror is not honoured")
	}
}
