package registry_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"berth/controlplane/registry"
	"berth/internal/api/scheme"
)

// ExampleResources shows how the apiserver fills a generic registry Store
// (and its /status copy) from berth's registry parts.
func ExampleResources() {
	s := scheme.New()
	pods := registry.Resources(s)[schema.GroupResource{Resource: "pods"}]
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Pod{} },
		NewListFunc:               func() runtime.Object { return &corev1.PodList{} },
		DefaultQualifiedResource:  pods.GroupResource,
		SingularQualifiedResource: schema.GroupResource{Resource: "pod"},
		PredicateFunc:             pods.PredicateFunc,
		CreateStrategy:            pods.Strategy,
		UpdateStrategy:            pods.Strategy,
		DeleteStrategy:            pods.Strategy,
		ResetFieldsStrategy:       pods.Strategy,
		TableConvertor:            pods.Table,
	}
	options := &generic.StoreOptions{AttrFunc: pods.AttrFunc, TriggerFunc: pods.TriggerFuncs, Indexers: pods.Indexers}
	// store.CompleteWithOptions(options) with options.RESTOptions set, then
	// a shallow copy with UpdateStrategy and ResetFieldsStrategy =
	// pods.StatusStrategy for /status.
	fmt.Println(store.DefaultQualifiedResource.Resource, options.Indexers != nil)
	// Output: pods true
}
