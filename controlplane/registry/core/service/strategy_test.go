package service

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/scheme"
)

func TestServiceTable(t *testing.T) {
	for name, tc := range map[string]struct {
		svc  v1.Service
		want []interface{}
	}{
		"cluster ip": {v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.10"},
			Ports: []v1.ServicePort{{Port: 80, Protocol: v1.ProtocolTCP}, {Port: 53, Protocol: v1.ProtocolUDP}}, Selector: map[string]string{"app": "web"}}},
			[]interface{}{"web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP"}},
		"node port": {v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.11"},
			Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}},
			[]interface{}{"np", "NodePort", "10.96.0.11", "<none>", "80:30080/TCP"}},
		"load balancer pending": {v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.12"}}},
			[]interface{}{"lb", "LoadBalancer", "10.96.0.12", "<pending>", "<none>"}},
		"headless":      {v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "h"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIPs: []string{"None"}}}, []interface{}{"h", "ClusterIP", "None", "<none>", "<none>"}},
		"external name": {v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "db.example.com"}}, []interface{}{"ext", "ExternalName", "<none>", "db.example.com", "<none>"}},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := Kind.Table.ConvertToTable(context.Background(), &tc.svc, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.want {
				if out.Rows[0].Cells[i] != w {
					t.Errorf("%s = %v, want %v", out.ColumnDefinitions[i].Name, out.Rows[0].Cells[i], w)
				}
			}
		})
	}
}

func TestServiceStrategy(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	svc := &v1.Service{Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1"}, Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "1.2.3.4"}}}}}
	s.PrepareForCreate(context.Background(), svc)
	if len(svc.Status.LoadBalancer.Ingress) != 0 || len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != "10.96.0.1" {
		t.Errorf("after create: %+v", svc)
	}
	upd := &v1.Service{Spec: v1.ServiceSpec{ClusterIPs: []string{"10.96.0.2"}}}
	old := &v1.Service{Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "5.6.7.8"}}}}}
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Spec.ClusterIP != "10.96.0.2" || upd.Status.LoadBalancer.Ingress[0].IP != "5.6.7.8" {
		t.Errorf("after update: %+v", upd)
	}
}

func TestDefaultIPFamilies(t *testing.T) {
	for name, tc := range map[string]struct {
		svc      v1.Service
		policy   v1.IPFamilyPolicy
		families []v1.IPFamily
	}{
		"cluster ip v4":        {v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: "10.96.0.1"}}, v1.IPFamilyPolicySingleStack, []v1.IPFamily{v1.IPv4Protocol}},
		"cluster ip v6":        {v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: "fd00::1"}}, v1.IPFamilyPolicySingleStack, []v1.IPFamily{v1.IPv6Protocol}},
		"headless no selector": {v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: "None"}}, v1.IPFamilyPolicyRequireDualStack, []v1.IPFamily{v1.IPv4Protocol}},
	} {
		svc := tc.svc
		DefaultIPFamilies(&svc)
		if *svc.Spec.IPFamilyPolicy != tc.policy || len(svc.Spec.IPFamilies) != 1 || svc.Spec.IPFamilies[0] != tc.families[0] {
			t.Errorf("%s: policy %v families %v", name, *svc.Spec.IPFamilyPolicy, svc.Spec.IPFamilies)
		}
	}
	ext := v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName}}
	DefaultIPFamilies(&ext)
	if ext.Spec.IPFamilyPolicy != nil || ext.Spec.IPFamilies != nil {
		t.Errorf("ExternalName got IP families")
	}
}

func TestTypeChangeDropsNodePorts(t *testing.T) {
	sc := scheme.New()
	s := Kind.Strategy(sc)
	old := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ClusterIP: "10.96.0.5", Ports: []v1.ServicePort{{Port: 80, NodePort: 30080}}, Selector: map[string]string{"app": "web"}}}
	sc.Default(old)
	s.PrepareForCreate(context.Background(), old)
	upd := old.DeepCopy()
	upd.Spec.Type = v1.ServiceTypeClusterIP
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Spec.Ports[0].NodePort != 0 || upd.Spec.ExternalTrafficPolicy != "" {
		t.Fatalf("NodePort→ClusterIP kept type-dependent fields: %+v", upd.Spec)
	}
	if errs := s.ValidateUpdate(context.Background(), upd, old); len(errs) != 0 {
		t.Fatalf("NodePort→ClusterIP rejected: %v", errs)
	}
	ext := old.DeepCopy()
	ext.Spec.Type = v1.ServiceTypeExternalName
	ext.Spec.ExternalName = "db.example.com"
	s.PrepareForUpdate(context.Background(), ext, old)
	if ext.Spec.ClusterIP != "" || ext.Spec.ClusterIPs != nil || ext.Spec.IPFamilyPolicy != nil || ext.Spec.InternalTrafficPolicy != nil {
		t.Fatalf("→ExternalName kept cluster IP fields: %+v", ext.Spec)
	}
	if errs := s.ValidateUpdate(context.Background(), ext, old); len(errs) != 0 {
		t.Fatalf("→ExternalName rejected: %v", errs)
	}
}

func TestUpdateKeepsAllocatedValues(t *testing.T) {
	sc := scheme.New()
	s := Kind.Strategy(sc)
	old := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ClusterIP: "10.96.0.5", Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}}}}
	sc.Default(old)
	s.PrepareForCreate(context.Background(), old)
	// The manifest as first applied: no cluster IP, no node port.
	put := &v1.Service{ObjectMeta: old.ObjectMeta, Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{{Name: "http", Port: 8080}}}}
	sc.Default(put)
	s.PrepareForUpdate(context.Background(), put, old)
	if put.Spec.ClusterIP != "10.96.0.5" || len(put.Spec.ClusterIPs) != 1 || put.Spec.Ports[0].NodePort != 30080 || put.Spec.IPFamilyPolicy == nil {
		t.Fatalf("allocated values not kept: %+v", put.Spec)
	}
	if errs := s.ValidateUpdate(context.Background(), put, old); len(errs) != 0 {
		t.Fatalf("update rejected: %v", errs)
	}
	changed := old.DeepCopy()
	changed.Spec.ClusterIP, changed.Spec.ClusterIPs = "10.96.0.6", []string{"10.96.0.6"}
	s.PrepareForUpdate(context.Background(), changed, old)
	if errs := s.ValidateUpdate(context.Background(), changed, old); len(errs) != 1 || errs[0].Field != "spec.clusterIPs[0]" {
		t.Fatalf("changed cluster IP: %v", errs)
	}
}
