package routes

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchInput is n Ingresses, each with its own host and two paths to its
// own Service of 10 ready endpoints.
func benchInput(n int) Input {
	in := Input{Controller: controller, Classes: []*networkingv1.IngressClass{class("berth", controller, true)}}
	port := int32(8080)
	name := "http"
	for i := range n {
		svc := fmt.Sprintf("svc-%d", i)
		in.Services = append(in.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}}}
		for j := range 10 {
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+1)}})
		}
		in.Slices = append(in.Slices, es)
		paths := []networkingv1.HTTPIngressPath{httpPath("/", networkingv1.PathTypePrefix, svc), httpPath("/api", networkingv1.PathTypePrefix, svc)}
		in.Ingresses = append(in.Ingresses, ing(svc, i, rule(fmt.Sprintf("host-%d.example", i), paths...)))
	}
	return in
}

// BenchmarkBuild measures building the whole table (what every change
// costs) for 100, 1000 and 5000 Ingresses.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		in := benchInput(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if t := Build(in); len(t.Served()) != n {
					b.Fatalf("%d served", len(t.Served()))
				}
			}
		})
	}
}

// BenchmarkRoute measures one lookup among 5000 hosts.
func BenchmarkRoute(b *testing.B) {
	t := Build(benchInput(5000))
	hosts := make([]string, 5000)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("HOST-%d.example", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := t.Route(hosts[i%len(hosts)], "/api/v1/items"); !ok {
			b.Fatal("not routed")
		}
		i++
	}
}
