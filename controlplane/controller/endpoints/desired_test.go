package endpoints

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pod(name, ip string, ready bool, port int32, mutate ...func(*corev1.Pod)) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// render: "ports: ready | notready" per subset.
func render(subsets []corev1.EndpointSubset) string {
	var out []string
	for _, s := range subsets {
		var ports, r, nr []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s=%d", p.Name, p.Port))
		}
		for _, a := range s.Addresses {
			r = append(r, a.IP)
		}
		for _, a := range s.NotReadyAddresses {
			nr = append(nr, a.IP)
		}
		out = append(out, fmt.Sprintf("%s: %s | %s", strings.Join(ports, ","), strings.Join(r, ","), strings.Join(nr, ",")))
	}
	return strings.Join(out, "; ")
}

func TestDesired(t *testing.T) {
	now := metav1.Now()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}
	pods := []*corev1.Pod{
		pod("b", "10.0.0.3", true, 8080),
		pod("a", "10.0.0.2", true, 8080, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a", "web" }),
		pod("c", "10.0.0.4", false, 8080),
		pod("d", "10.0.0.5", true, 9090),
		pod("term", "10.0.0.6", true, 8080, func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
		pod("done", "10.0.0.7", true, 8080, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("noip", "", true, 8080),
		pod("noport", "10.0.0.8", true, 8080, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil }),
	}
	subsets, labels := Desired(svc, pods)
	if got, want := render(subsets), "http=8080: 10.0.0.2,10.0.0.3 | 10.0.0.4; http=9090: 10.0.0.5 | "; got != want {
		t.Fatalf("subsets %q, want %q", got, want)
	}
	if _, ok := labels[HeadlessLabel]; !ok || labels["a"] != "b" {
		t.Errorf("labels %v", labels)
	}
	a := subsets[0].Addresses[0]
	if a.Hostname != "a" || *a.NodeName != "n1" || a.TargetRef.Name != "a" || subsets[0].Addresses[1].Hostname != "" {
		t.Errorf("address %+v", a)
	}
	// publishNotReadyAddresses: not-ready and terminating pods are ready addresses.
	svc.Spec.PublishNotReadyAddresses = true
	subsets, _ = Desired(svc, pods)
	if got, want := render(subsets), "http=8080: 10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.6 | ; http=9090: 10.0.0.5 | "; got != want {
		t.Fatalf("publishNotReadyAddresses: %q, want %q", got, want)
	}
	// A headless Service without ports lists addresses alone.
	svc.Spec.Ports, svc.Spec.PublishNotReadyAddresses = nil, false
	subsets, _ = Desired(svc, pods[:2])
	if got := render(subsets); got != ": 10.0.0.2,10.0.0.3 | " {
		t.Fatalf("portless headless: %q", got)
	}
}
