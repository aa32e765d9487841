package endpointslice

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func testService(mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "svc-uid", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, ClusterIP: "10.43.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

func testPod(name, ip string, ready bool, containerPort int32, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: containerPort, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func conds(e discoveryv1.Endpoint) string {
	return fmt.Sprintf("ready=%v serving=%v terminating=%v", *e.Conditions.Ready, *e.Conditions.Serving, *e.Conditions.Terminating)
}

func TestPlanEndpoints(t *testing.T) {
	now := metav1.Now()
	pods := []*corev1.Pod{
		testPod("a-ready", "10.42.0.2", true, 8080, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a", "web" }),
		testPod("b-notready", "10.42.0.3", false, 8080),
		testPod("c-terminating", "10.42.0.4", true, 8080, func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
		testPod("d-noip", "", true, 8080, func(p *corev1.Pod) { p.Status.PodIPs = nil }),
		testPod("e-done", "10.42.0.6", false, 8080, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
	}
	plan := Plan(testService(), pods, map[string]string{"node1": "zone-a"}, nil, time.Time{})
	if len(plan.Create) != 1 || len(plan.Update)+len(plan.Delete) != 0 {
		t.Fatalf("plan %+v", plan)
	}
	s := plan.Create[0]
	if s.GenerateName != "web-" || s.AddressType != discoveryv1.AddressTypeIPv4 || s.Labels[discoveryv1.LabelServiceName] != "web" ||
		s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels["team"] != "a" || s.OwnerReferences[0].UID != "svc-uid" ||
		*s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" {
		t.Fatalf("slice %+v", s)
	}
	want := map[string]string{
		"10.42.0.2": "ready=true serving=true terminating=false",
		"10.42.0.3": "ready=false serving=false terminating=false",
		"10.42.0.4": "ready=false serving=true terminating=true",
	}
	if len(s.Endpoints) != len(want) {
		t.Fatalf("endpoints %+v", s.Endpoints)
	}
	for _, e := range s.Endpoints {
		if got := conds(e); got != want[e.Addresses[0]] {
			t.Errorf("%s: %s, want %s", e.Addresses[0], got, want[e.Addresses[0]])
		}
		if *e.NodeName != "node1" || *e.Zone != "zone-a" || e.TargetRef.Kind != "Pod" {
			t.Errorf("endpoint %+v", e)
		}
	}
	if h := s.Endpoints[0].Hostname; h == nil || *h != "a" || s.Endpoints[1].Hostname != nil {
		t.Errorf("hostname only for the pod whose subdomain is the service")
	}

	// publishNotReadyAddresses: every endpoint ready.
	plan = Plan(testService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }), pods, nil, nil, time.Time{})
	for _, e := range plan.Create[0].Endpoints {
		if !*e.Conditions.Ready {
			t.Errorf("%s not ready with publishNotReadyAddresses", e.Addresses[0])
		}
	}
}

func TestPlanGroupsAndChunks(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 150 {
		pods = append(pods, testPod(fmt.Sprintf("p%03d", i), fmt.Sprintf("10.42.%d.%d", i/200, i%200+2), true, 8080))
	}
	// A pod whose named port resolves differently gets a slice of its own.
	pods = append(pods, testPod("other", "10.42.9.9", true, 9090))
	plan := Plan(testService(), pods, nil, nil, time.Time{})
	if len(plan.Create) != 3 {
		t.Fatalf("%d slices, want 100+50 on 8080 and 1 on 9090", len(plan.Create))
	}
	sizes := map[int32][]int{}
	for _, s := range plan.Create {
		sizes[*s.Ports[0].Port] = append(sizes[*s.Ports[0].Port], len(s.Endpoints))
	}
	if fmt.Sprint(sizes[8080]) != "[100 50]" || fmt.Sprint(sizes[9090]) != "[1]" {
		t.Fatalf("sizes %v", sizes)
	}
}

func TestPlanReusesExisting(t *testing.T) {
	svc := testService()
	pods := []*corev1.Pod{testPod("a", "10.42.0.2", true, 8080)}
	created := Plan(svc, pods, nil, nil, time.Time{}).Create[0]
	created.Name, created.UID = "web-abc", "slice-uid"
	if p := Plan(svc, pods, nil, []*discoveryv1.EndpointSlice{created}, time.Time{}); !p.Empty() {
		t.Fatalf("nothing changed, plan %+v", p)
	}
	// A pod more: the slice is updated in place.
	more := append(pods, testPod("b", "10.42.0.3", false, 8080))
	p := Plan(svc, more, nil, []*discoveryv1.EndpointSlice{created}, time.Time{})
	if len(p.Update) != 1 || len(p.Create)+len(p.Delete) != 0 || p.Update[0].Name != "web-abc" || len(p.Update[0].Endpoints) != 2 {
		t.Fatalf("plan %+v", p)
	}
	// A slice of ports no pod has any more is deleted.
	stale := created.DeepCopy()
	stale.Name, stale.UID = "web-old", "old-uid"
	port := int32(1234)
	stale.Ports[0].Port = &port
	p = Plan(svc, pods, nil, []*discoveryv1.EndpointSlice{created, stale}, time.Time{})
	if len(p.Create)+len(p.Update) != 0 || len(p.Delete) != 1 || p.Delete[0].Name != "web-old" {
		t.Fatalf("plan %+v", p)
	}
	// No pod left: the slices go, one empty placeholder stays (and is kept).
	p = Plan(svc, nil, nil, []*discoveryv1.EndpointSlice{created}, time.Time{})
	if len(p.Create) != 1 || len(p.Create[0].Endpoints)+len(p.Create[0].Ports) != 0 || len(p.Delete) != 1 {
		t.Fatalf("plan %+v", p)
	}
	placeholder := p.Create[0]
	placeholder.Name = "web-empty"
	if p := Plan(svc, nil, nil, []*discoveryv1.EndpointSlice{placeholder}, time.Time{}); !p.Empty() {
		t.Fatalf("placeholder replaced: %+v", p)
	}
}

func TestPlanEmptyServiceAndIPv6(t *testing.T) {
	svc := testService(func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9100, Protocol: corev1.ProtocolTCP})
		s.Spec.ClusterIP = corev1.ClusterIPNone
	})
	p := Plan(svc, nil, nil, nil, time.Time{})
	if len(p.Create) != 1 || len(p.Create[0].Endpoints) != 0 || len(p.Create[0].Ports) != 0 {
		t.Fatalf("empty service plan %+v", p.Create)
	}
	if _, ok := p.Create[0].Labels[HeadlessLabel]; !ok {
		t.Error("headless label missing")
	}
	v6 := testService(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} })
	p = Plan(v6, []*corev1.Pod{testPod("a", "fd00::2", true, 8080), testPod("b", "10.42.0.2", true, 8080)}, nil, nil, time.Time{})
	if len(p.Create) != 1 || p.Create[0].AddressType != discoveryv1.AddressTypeIPv6 || len(p.Create[0].Endpoints) != 1 || p.Create[0].Endpoints[0].Addresses[0] != "fd00::2" {
		t.Fatalf("IPv6 plan %+v", p.Create)
	}
}

func TestLastChangeTriggerTime(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	svc := testService()
	svc.CreationTimestamp = metav1.NewTime(t0)
	readyAt := func(p *corev1.Pod, at time.Time) *corev1.Pod {
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
		return p
	}
	a := readyAt(testPod("a", "10.42.0.1", true, 8080), t0.Add(time.Second))
	b := readyAt(testPod("b", "10.42.0.2", true, 8080), t0.Add(2*time.Second))
	tr := NewTriggerTimes()
	// First sync: the Service's creation.
	got, commit := tr.Compute("ns/s", svc, []*corev1.Pod{a, b})
	if !got.Equal(t0) {
		t.Fatalf("first: %v", got)
	}
	commit()
	// Nothing changed: zero.
	if got, _ := tr.Compute("ns/s", svc, []*corev1.Pod{a, b}); !got.IsZero() {
		t.Fatalf("unchanged: %v", got)
	}
	// The earliest of the changed pods' transitions, until committed (a
	// failed write gets the same time again).
	a2 := readyAt(a.DeepCopy(), t0.Add(5*time.Second))
	b2 := readyAt(b.DeepCopy(), t0.Add(4*time.Second))
	for range 2 {
		got, commit = tr.Compute("ns/s", svc, []*corev1.Pod{a2, b2})
		if !got.Equal(t0.Add(4 * time.Second)) {
			t.Fatalf("changed: %v", got)
		}
	}
	commit()
	if got, _ := tr.Compute("ns/s", svc, []*corev1.Pod{a2, b2}); !got.IsZero() {
		t.Fatalf("committed: %v", got)
	}
	// Written slices carry it in RFC 3339 with nanoseconds, UTC; a zero
	// time clears it.
	p := Plan(svc, []*corev1.Pod{a2}, nil, nil, t0)
	if got := p.Create[0].Annotations[corev1.EndpointsLastChangeTriggerTime]; got != "2026-01-02T03:04:05.0000006Z" {
		t.Fatalf("annotation %q", got)
	}
	p = Plan(svc, []*corev1.Pod{a2, b2}, nil, p.Create, time.Time{})
	if _, ok := p.Update[0].Annotations[corev1.EndpointsLastChangeTriggerTime]; ok || len(p.Update) != 1 {
		t.Fatalf("zero trigger kept the annotation: %+v", p.Update)
	}
}
