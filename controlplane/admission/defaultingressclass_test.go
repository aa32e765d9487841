package admission_test

import (
	"context"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	networkinglisters "k8s.io/client-go/listers/networking/v1"

	berthadmission "berth/controlplane/admission"
)

func ingressClass(name string, created time.Time, isDefault string) *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec: networkingv1.IngressClassSpec{Controller: "example.com/" + name}}
	if isDefault != "" {
		c.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: isDefault}
	}
	return c
}

func TestDefaultIngressClass(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	named := "nginx"
	for _, tc := range []struct {
		name        string
		classes     []any
		class       *string
		annotations map[string]string
		want        *string
	}{
		{"no class named: the default", []any{ingressClass("berth", t0, "true"), ingressClass("other", t0, "")}, nil, nil, ptr("berth")},
		{"several defaults: the newest", []any{ingressClass("old", t0, "true"), ingressClass("new", t0.Add(time.Second), "true")}, nil, nil, ptr("new")},
		{"several defaults of one age: the lowest name", []any{ingressClass("b", t0, "true"), ingressClass("a", t0, "true")}, nil, nil, ptr("a")},
		{"a default marked false is none", []any{ingressClass("berth", t0, "false")}, nil, nil, nil},
		{"no default class: unchanged", nil, nil, nil, nil},
		{"a named class is kept", []any{ingressClass("berth", t0, "true")}, &named, nil, &named},
		{"the deprecated annotation names a class", []any{ingressClass("berth", t0, "true")}, nil,
			map[string]string{"kubernetes.io/ingress.class": "nginx"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := berthadmission.NewDefaultIngressClass(networkinglisters.NewIngressClassLister(indexer(t, tc.classes...)))
			if err != nil {
				t.Fatal(err)
			}
			ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: tc.annotations},
				Spec: networkingv1.IngressSpec{IngressClassName: tc.class}}
			a := createAttrs(ing, networkingv1.SchemeGroupVersion.WithKind("Ingress"), networkingv1.SchemeGroupVersion.WithResource("ingresses"), "ns", "web", alice)
			if err := admit(context.Background(), p, a); err != nil {
				t.Fatal(err)
			}
			if got := ing.Spec.IngressClassName; (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("ingressClassName %v, want %v", deref(got), deref(tc.want))
			}
		})
	}
}

func TestDefaultIngressClassOnlyOnCreate(t *testing.T) {
	p, err := berthadmission.NewDefaultIngressClass(networkinglisters.NewIngressClassLister(indexer(t, ingressClass("berth", time.Now(), "true"))))
	if err != nil {
		t.Fatal(err)
	}
	if p.Handles(admission.Update) {
		t.Fatal("the plugin handles updates; upstream defaults the class on create only")
	}
	// A status write (a subresource) is left alone even on create.
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	a := admission.NewAttributesRecord(ing, nil, networkingv1.SchemeGroupVersion.WithKind("Ingress"), "ns", "web",
		networkingv1.SchemeGroupVersion.WithResource("ingresses"), "status", admission.Create, &metav1.CreateOptions{}, false, alice)
	if err := admit(context.Background(), p, a); err != nil || ing.Spec.IngressClassName != nil {
		t.Fatalf("subresource: class %v, err %v", deref(ing.Spec.IngressClassName), err)
	}
	if _, err := berthadmission.NewDefaultIngressClass(nil); err == nil {
		t.Fatal("no lister accepted")
	}
}
