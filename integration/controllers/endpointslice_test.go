package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/controlplane/controller/endpointslice"
	"berth/controlplane/controller/endpointslicemirroring"
	"berth/integration/harness"
)

// setPodStatus plays the agent: running with ip, ready or not.
func setPodStatus(t *testing.T, ns, name, ip string, ready bool) {
	t.Helper()
	ctx := context.Background()
	p, err := env.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = corev1.PodRunning, ip, []corev1.PodIP{{IP: ip}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if _, err := env.client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// sliceState renders the Service's managed slices: "IP:port ready/serving/terminating" sorted.
func sliceState(ns, svc string) (string, error) {
	l, err := env.client.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + svc + "," + discoveryv1.LabelManagedBy + "=" + endpointslice.ManagedBy})
	if err != nil {
		return "", err
	}
	var out []string
	for _, s := range l.Items {
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != svc {
			return "", fmt.Errorf("slice %s owners %+v", s.Name, s.OwnerReferences)
		}
		for _, e := range s.Endpoints {
			port := int32(0)
			if len(s.Ports) > 0 {
				port = *s.Ports[0].Port
			}
			out = append(out, fmt.Sprintf("%s:%d %v/%v/%v", e.Addresses[0], port, *e.Conditions.Ready, *e.Conditions.Serving, *e.Conditions.Terminating))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ","), nil
}

func waitSlices(t *testing.T, ns, svc, want string) {
	t.Helper()
	var got string
	harness.Eventually(t, "endpoint slices "+want, func() (bool, error) {
		var err error
		got, err = sliceState(ns, svc)
		if err != nil {
			return false, err
		}
		return got == want, fmt.Errorf("slices %q", got)
	})
}

// TestEndpointSlices: a Service's EndpointSlices (and Endpoints) follow
// its pods' IPs, readiness and deletion, with named target ports resolved.
func TestEndpointSlices(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
	}}
	if _, err := env.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, ns, "web", "") // the empty placeholder
	for i, name := range []string{"a", "b", "c"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: "node-x", Containers: []corev1.Container{{Name: "c", Image: "web",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(8080 + i%2)}}}}}}
		if _, err := env.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setPodStatus(t, ns, "a", "10.42.0.2", true)
	setPodStatus(t, ns, "b", "10.42.0.3", true)
	setPodStatus(t, ns, "c", "10.42.0.4", false)
	waitSlices(t, ns, "web", "10.42.0.2:8080 true/true/false,10.42.0.3:8081 true/true/false,10.42.0.4:8080 false/false/false")
	// The legacy Endpoints, one subset per resolved port.
	harness.Eventually(t, "endpoints", func() (bool, error) {
		ep, err := env.client.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var got []string
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				got = append(got, fmt.Sprintf("%s:%d", a.IP, s.Ports[0].Port))
			}
			for _, a := range s.NotReadyAddresses {
				got = append(got, fmt.Sprintf("%s:%d notready", a.IP, s.Ports[0].Port))
			}
		}
		slices.Sort(got)
		return strings.Join(got, ",") == "10.42.0.2:8080,10.42.0.3:8081,10.42.0.4:8080 notready", fmt.Errorf("endpoints %v", got)
	})

	// Readiness lost, then a graceful delete (the pod terminates).
	// (At a transition time of its own: times are kept to the second, and
	// one not after the last the controller saw is no change.)
	podA, err := env.client.CoreV1().Pods(ns).Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lost := metav1.NewTime(time.Now().Add(time.Hour).Truncate(time.Second))
	podA.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: lost}}
	if _, err := env.client.CoreV1().Pods(ns).UpdateStatus(ctx, podA, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, ns, "web", "10.42.0.2:8080 false/false/false,10.42.0.3:8081 true/true/false,10.42.0.4:8080 false/false/false")
	// The slice written for it carries the pod's Ready transition as its
	// last-change-trigger-time.
	want := lost.UTC().Format(time.RFC3339Nano)
	harness.Eventually(t, "the slice's last-change-trigger-time "+want, func() (bool, error) {
		l, err := env.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err
		}
		for _, s := range l.Items { // the slice of port 8080, a's
			if len(s.Ports) == 1 && *s.Ports[0].Port == 8080 {
				got := s.Annotations[corev1.EndpointsLastChangeTriggerTime]
				return got == want, fmt.Errorf("annotation %q", got)
			}
		}
		return false, fmt.Errorf("no slice of port 8080")
	})
	if err := env.client.CoreV1().Pods(ns).Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, ns, "web", "10.42.0.2:8080 false/false/false,10.42.0.3:8081 false/true/true,10.42.0.4:8080 false/false/false")
	zero := int64(0)
	if err := env.client.CoreV1().Pods(ns).Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, ns, "web", "10.42.0.2:8080 false/false/false,10.42.0.4:8080 false/false/false")

	// publishNotReadyAddresses: every address ready.
	cur, err := env.client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.PublishNotReadyAddresses = true
	if _, err := env.client.CoreV1().Services(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, ns, "web", "10.42.0.2:8080 true/false/false,10.42.0.4:8080 true/false/false")

	// A deleted Service's slices go.
	if err := env.client.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "slices deleted", func() (bool, error) {
		l, err := env.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	})
}

// mirroredState renders the mirrored slices of svc: "IP ready" sorted.
func mirroredState(ns, svc string) (string, error) {
	l, err := env.client.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + svc + "," + discoveryv1.LabelManagedBy + "=" + endpointslicemirroring.ManagedBy})
	if err != nil {
		return "", err
	}
	var out []string
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			out = append(out, fmt.Sprintf("%s:%d %v", e.Addresses[0], *s.Ports[0].Port, *e.Conditions.Ready))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ","), nil
}

// TestEndpointSliceMirroring: the Endpoints a user writes for a Service
// without a selector are mirrored into EndpointSlices through create,
// update and delete, and the endpoints controller leaves them alone
// (regression: it deleted a user's Endpoints on their first update).
func TestEndpointSliceMirroring(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := env.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ext", Labels: map[string]string{"user": "set"}}, Subsets: []corev1.EndpointSubset{{
		Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}}, Addresses: []corev1.EndpointAddress{{IP: "10.1.2.3"}}}}}
	created, err := env.client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wait := func(want string) {
		t.Helper()
		harness.Eventually(t, "mirrored slices "+want, func() (bool, error) {
			got, err := mirroredState(ns, "ext")
			if err != nil {
				return false, err
			}
			return got == want, fmt.Errorf("mirrored %q", got)
		})
	}
	wait("10.1.2.3:8080 true")
	// Endpoints without any Service are the user's too: an update keeps
	// them (the conformance spec "should test the lifecycle of an Endpoint").
	orphan, err := env.client.CoreV1().Endpoints(ns).Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orphan.Labels = map[string]string{"updated": "yes"}
	if _, err := env.client.CoreV1().Endpoints(ns).Update(ctx, orphan, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	created.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "10.2.3.4"}}
	created.Subsets[0].NotReadyAddresses = []corev1.EndpointAddress{{IP: "10.2.3.5"}}
	if _, err := env.client.CoreV1().Endpoints(ns).Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("10.2.3.4:8080 true,10.2.3.5:8080 false")
	for _, name := range []string{"ext", "orphan"} {
		if _, err := env.client.CoreV1().Endpoints(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("the user's Endpoints %s after an update: %v", name, err)
		}
	}
	if err := env.client.CoreV1().Endpoints(ns).Delete(ctx, "ext", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("")
}
