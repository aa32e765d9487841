package apiserver

import (
	"context"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
)

// Dynamic serves resources that come and go while the server runs (the
// custom resources of CustomResourceDefinitions). Built-in resources win:
// Dynamic is asked only for what Config.Resources does not serve.
// Implementations must be safe for concurrent use.
type Dynamic interface {
	// Lookup returns the resource served at gv/resource, or nil.
	Lookup(gv schema.GroupVersion, resource string) *Resource
	// Groups returns the served groups, each with its versions in
	// preference order (the first is the preferred version).
	Groups() []DynamicGroup
	// Resources returns the resources of one group version, by name.
	Resources(gv schema.GroupVersion) []*Resource
}

// DynamicGroup is one group served by a Dynamic.
type DynamicGroup struct {
	Name     string
	Versions []string
}

// Custom is the object machinery of a resource whose objects are not in
// the handler's scheme (custom resources, served as unstructured objects):
// their serializers, creation, typing, field managers and field labels.
type Custom struct {
	// Serializer decodes request bodies into the resource's version
	// (with its defaulting and pruning) and encodes its objects.
	Serializer runtime.NegotiatedSerializer
	Creater    runtime.ObjectCreater
	Typer      runtime.ObjectTyper
	// Objects is what admission plugins get to convert and default.
	Objects admission.ObjectInterfaces
	// FieldManagers by subresource ("" and "status"); nil: no managed
	// fields and no server-side apply.
	FieldManagers map[string]*managedfields.FieldManager
	// ConvertFieldLabel checks a field selector's label.
	ConvertFieldLabel func(label, value string) (string, string, error)
	// Warnings go with every response (a deprecated version's).
	Warnings []string
}

type customKey struct{}

// withCustom records the request's custom machinery in its context.
func withCustom(ctx context.Context, c *Custom) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, customKey{}, c)
}

func customFrom(ctx context.Context) *Custom {
	c, _ := ctx.Value(customKey{}).(*Custom)
	return c
}

// serializer is the request's negotiated serializer.
func (h *Handler) serializer(ctx context.Context) runtime.NegotiatedSerializer {
	if c := customFrom(ctx); c != nil {
		return c.Serializer
	}
	return h.codecs
}

// creater makes new objects of the request's kinds.
func (h *Handler) creater(ctx context.Context) runtime.ObjectCreater {
	if c := customFrom(ctx); c != nil {
		return c.Creater
	}
	return h.cfg.Scheme
}

// typer types the request's objects.
func (h *Handler) typer(ctx context.Context) runtime.ObjectTyper {
	if c := customFrom(ctx); c != nil {
		return c.Typer
	}
	return h.cfg.Scheme
}

// admissionObjects are the ObjectInterfaces for a's resource.
func (h *Handler) admissionObjects(a admission.Attributes) admission.ObjectInterfaces {
	if h.cfg.Dynamic == nil {
		return h.objects
	}
	gvr := a.GetResource()
	if _, static := h.resources[gvr.GroupVersion()][gvr.Resource]; static {
		return h.objects
	}
	if res := h.cfg.Dynamic.Lookup(gvr.GroupVersion(), gvr.Resource); res != nil && res.Custom != nil {
		return res.Custom.Objects
	}
	return h.objects
}

// dynamicGroups are the Dynamic's groups not served by built-in resources.
func (h *Handler) dynamicGroups() []DynamicGroup {
	if h.cfg.Dynamic == nil {
		return nil
	}
	var out []DynamicGroup
	for _, g := range h.cfg.Dynamic.Groups() {
		builtIn := false
		for _, gv := range h.groups {
			builtIn = builtIn || gv.Group == g.Name
		}
		if !builtIn {
			out = append(out, g)
		}
	}
	return out
}

// dynamicResources are the Dynamic's resources of gv, by name.
func (h *Handler) dynamicResources(gv schema.GroupVersion) map[string]*Resource {
	if h.cfg.Dynamic == nil {
		return nil
	}
	out := map[string]*Resource{}
	for _, r := range h.cfg.Dynamic.Resources(gv) {
		out[r.Resource] = r
	}
	return out
}

// dynamicDiscovery is the aggregated discovery of a Dynamic's group.
func (h *Handler) dynamicDiscovery(group string) []apidiscoveryv2.APIVersionDiscovery {
	var out []apidiscoveryv2.APIVersionDiscovery
	for _, g := range h.dynamicGroups() {
		if g.Name != group {
			continue
		}
		for _, ver := range g.Versions {
			v := apidiscoveryv2.APIVersionDiscovery{Version: ver, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, r := range h.cfg.Dynamic.Resources(schema.GroupVersion{Group: group, Version: ver}) {
				v.Resources = append(v.Resources, resourceDiscovery(r))
			}
			out = append(out, v)
		}
	}
	return out
}
