package admission

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
)

// DefaultIngressClassName is the plugin's upstream name.
const DefaultIngressClassName = "DefaultIngressClass"

// ingressClassAnnotation is the deprecated annotation naming an Ingress's
// class; an Ingress carrying it has chosen a class.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

var ingressesResource = networkingv1.SchemeGroupVersion.WithResource("ingresses")

// DefaultIngressClass gives a new Ingress that names no class (neither
// spec.ingressClassName nor the deprecated kubernetes.io/ingress.class
// annotation) the default IngressClass: the one annotated
// ingressclass.kubernetes.io/is-default-class "true", the newest (then the
// lowest name) when several are. With no default class nothing changes.
type DefaultIngressClass struct {
	*admission.Handler
	classes networkinglisters.IngressClassLister
}

var _ admission.MutationInterface = (*DefaultIngressClass)(nil)

// NewDefaultIngressClass returns the plugin reading classes from lister.
func NewDefaultIngressClass(classes networkinglisters.IngressClassLister) (*DefaultIngressClass, error) {
	if classes == nil {
		return nil, fmt.Errorf("%s: an IngressClass lister is required", DefaultIngressClassName)
	}
	return &DefaultIngressClass{Handler: admission.NewHandler(admission.Create), classes: classes}, nil
}

// Admit sets the default class on an Ingress that names none.
func (d *DefaultIngressClass) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isResource(a, ingressesResource, "") || a.GetOperation() != admission.Create {
		return nil
	}
	ing, ok := a.GetObject().(*networkingv1.Ingress)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("expected Ingress resource, got: %v", a.GetKind()))
	}
	if ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.Annotations[ingressClassAnnotation]; ok {
		return nil
	}
	class, err := d.defaultClass()
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if class != nil {
		name := class.Name
		ing.Spec.IngressClassName = &name
	}
	return nil
}

// defaultClass is the newest class marked default (the lowest name on a
// tie), or nil.
func (d *DefaultIngressClass) defaultClass() (*networkingv1.IngressClass, error) {
	classes, err := d.classes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return newestDefault(classes, func(c *networkingv1.IngressClass) bool {
		return c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
	}), nil
}

// newestDefault is the newest of items that isDefault holds for (the lowest
// name on a tie), or nil: the default class when several are marked so.
func newestDefault[T metav1.Object](items []T, isDefault func(T) bool) T {
	var best T
	found := false
	for _, c := range items {
		if !isDefault(c) {
			continue
		}
		if !found {
			best, found = c, true
			continue
		}
		ct, bt := c.GetCreationTimestamp(), best.GetCreationTimestamp()
		if ct.After(bt.Time) || (ct.Equal(&bt) && c.GetName() < best.GetName()) {
			best = c
		}
	}
	return best
}
