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
			out, err := Table.ConvertToTable(context.Background(), &tc.svc, nil)
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
	s := NewStrategy(scheme.New())
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
