package controllers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/controlplane/controller/servicecidr"
	"berth/integration/harness"
)

// TestServiceCIDRsAndIPAddresses: the server's service range is the Ready
// ServiceCIDR "kubernetes" (protected by the finalizer); every cluster IP
// is an IPAddress naming its Service, gone with the Service; an extra
// ServiceCIDR extends the range; a ServiceCIDR in use cannot go away (Ready
// False, Terminating) until its last Service does.
func TestServiceCIDRsAndIPAddresses(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cidrs := env.client.NetworkingV1().ServiceCIDRs()
	ips := env.client.NetworkingV1().IPAddresses()
	svcs := env.client.CoreV1().Services(ns)

	harness.Eventually(t, "the default ServiceCIDR ready with its finalizer", func() (bool, error) {
		sc, err := cidrs.Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(sc.Spec.CIDRs) == 1 && meta.IsStatusConditionTrue(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady) &&
			len(sc.Finalizers) == 1 && sc.Finalizers[0] == servicecidr.Finalizer, nil
	})
	// default/kubernetes holds the range's first address.
	first, err := ips.Get(ctx, "10.43.0.1", metav1.GetOptions{})
	if err != nil || first.Spec.ParentRef.Name != "kubernetes" || first.Spec.ParentRef.Namespace != "default" {
		t.Fatalf("the kubernetes Service's IPAddress: %+v %v", first, err)
	}

	newSvc := func(name, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip,
			Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	}
	web, err := svcs.Create(ctx, newSvc("web", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := ips.Get(ctx, web.Spec.ClusterIP, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no IPAddress for %s: %v", web.Spec.ClusterIP, err)
	}
	ref := ip.Spec.ParentRef
	if ref.Group != "" || ref.Resource != "services" || ref.Namespace != ns || ref.Name != "web" ||
		ip.Labels[networkingv1.LabelManagedBy] != "ipallocator.k8s.io" || ip.Labels[networkingv1.LabelIPAddressFamily] != "IPv4" {
		t.Fatalf("IPAddress %+v", ip)
	}
	if out := kubectl(t, "get", "ipaddress", web.Spec.ClusterIP); !strings.Contains(out, "services/"+ns+"/web") {
		t.Errorf("kubectl get ipaddress:\n%s", out)
	}

	// An address outside every ServiceCIDR is refused until one covers it.
	const extraIP = "10.250.0.10"
	_, err = svcs.Create(ctx, newSvc("extra", extraIP), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "is not in the valid range") {
		t.Fatalf("outside the ranges: %v", err)
	}
	if _, err := cidrs.Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.250.0.0/24"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the extra ServiceCIDR ready", func() (bool, error) {
		sc, err := cidrs.Get(ctx, "extra", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady) && len(sc.Finalizers) == 1, err
	})
	if out := kubectl(t, "get", "servicecidrs"); !strings.Contains(out, "10.250.0.0/24") {
		t.Errorf("kubectl get servicecidrs:\n%s", out)
	}
	extra, err := svcs.Create(ctx, newSvc("extra", extraIP), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("in the extra ServiceCIDR: %v", err)
	}
	if _, err := ips.Get(ctx, extraIP, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	// Deleting the extra ServiceCIDR is blocked while a Service uses it;
	// meanwhile it allocates nothing.
	if err := cidrs.Delete(ctx, "extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the extra ServiceCIDR terminating", func() (bool, error) {
		sc, err := cidrs.Get(ctx, "extra", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
		return sc.DeletionTimestamp != nil && c != nil && c.Status == metav1.ConditionFalse && c.Reason == networkingv1.ServiceCIDRReasonTerminating, nil
	})
	if _, err := svcs.Create(ctx, newSvc("late", "10.250.0.11"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("allocated from a terminating ServiceCIDR: %v", err)
	}
	if err := svcs.Delete(ctx, extra.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the extra ServiceCIDR gone once unused", func() (bool, error) {
		_, err := cidrs.Get(ctx, "extra", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})

	// Deleting the Service releases its address.
	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ips.Get(ctx, web.Spec.ClusterIP, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("IPAddress of a deleted Service: %v", err)
	}
}
