package apiserver

import (
	"context"
	"net/http"
	"net/url"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Resource is one served resource: its identity for discovery and routing,
// and the generic registry store behind it.
type Resource struct {
	// GroupVersion the resource is served at; Resource is its plural name.
	GroupVersion schema.GroupVersion
	Resource     string
	// Kind of the objects; SingularName as kubectl knows it ("pod").
	Kind         string
	SingularName string
	Namespaced   bool
	// ShortNames ("po") and Categories ("all") for discovery.
	ShortNames []string
	Categories []string
	// Store does create/get/list/watch/update/delete for the resource
	// (a k8s.io/apiserver generic registry Store, possibly wrapped).
	Store rest.StandardStorage
	// Subresources by name ("status", "scale", "binding", "log", ...).
	Subresources map[string]Subresource
	// Verbs, when set, are the only verbs served and listed in discovery,
	// for resources that are not stored (selfsubjectreviews: create; its
	// Store need implement only rest.Creater). nil: every verb of a
	// generic store.
	Verbs []string
	// Custom, when set, is the object machinery of a resource outside the
	// handler's scheme (custom resources); nil for built-in resources.
	Custom *Custom
}

// printable reports whether the resource's objects can be printed as a
// Table: those of stored resources (a resource served for create only, a
// review, has no table convertor, as upstream).
func (r *Resource) printable() bool {
	return r.Verbs == nil || slices.Contains(r.Verbs, "get") || slices.Contains(r.Verbs, "list")
}

// discoveryVerbs are the verbs discovery lists for the resource.
func (r *Resource) discoveryVerbs() metav1.Verbs {
	if r.Verbs != nil {
		return metav1.Verbs(r.Verbs)
	}
	return storageVerbs
}

// Subresource is a storage for one subresource. Storage implements some of
// rest.Getter, rest.Updater (GET, PUT, PATCH) and rest.NamedCreater (POST);
// Connect, when set, handles the request itself (log, exec, attach,
// portforward proxied to the node).
type Subresource struct {
	// Kind of the objects exchanged (autoscaling/v1 Scale, v1 Binding, ...).
	Kind    schema.GroupVersionKind
	Storage rest.Storage
	Connect func(ctx context.Context, w http.ResponseWriter, r *http.Request, namespace, name string) error
	// ConnectVerbs are the discovery verbs of a Connect subresource ("get", "create").
	ConnectVerbs []string
	// ConnectOptions, when set, makes a Connect subresource go through
	// admission first, as upstream's connecters: operation CONNECT with
	// the options object (PodExecOptions, ...) it builds from the query.
	// Nil: not admitted (pods/log, a read).
	ConnectOptions func(query url.Values) (runtime.Object, error)
	// ConnectPath hands ConnectOptions the path after the subresource
	// (with a leading slash, and the request's trailing slash) as the
	// "path" parameter, as upstream's connecters with a subpath (the
	// proxy subresources).
	ConnectPath bool
}

// GroupVersionResource names the resource.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Resource)
}

// GroupVersionKind names the resource's kind.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}
