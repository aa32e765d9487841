package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// fieldManagers builds a field manager (managedFields tracking and
// server-side apply) for a resource and each of its subresources that
// exchange the resource's own kind (status); nil without a type converter.
func (h *Handler) fieldManagers(res *Resource) (map[string]*managedfields.FieldManager, error) {
	if h.cfg.TypeConverter == nil || res.Verbs != nil {
		// No type converter, or nothing stored: no managed fields.
		return nil, nil
	}
	out := map[string]*managedfields.FieldManager{}
	build := func(sub string, storage any) error {
		fm, err := managedfields.NewDefaultFieldManager(h.cfg.TypeConverter, h.cfg.Scheme, h.cfg.Scheme, h.cfg.Scheme,
			res.GroupVersionKind(), res.GroupVersion, sub, resetFilters(storage))
		if err != nil {
			return fmt.Errorf("apiserver: field manager for %s: %w", res.GroupVersionResource(), err)
		}
		out[sub] = fm
		return nil
	}
	if err := build("", res.Store); err != nil {
		return nil, err
	}
	for name, sub := range res.Subresources {
		if sub.Connect == nil && sub.Kind == res.GroupVersionKind() {
			if err := build(name, sub.Storage); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// resetFilters are the fields a strategy resets (status on the main
// resource, spec on /status, all but spec.ephemeralContainers on
// pods/ephemeralcontainers), which apply must not claim.
func resetFilters(storage any) map[fieldpath.APIVersion]fieldpath.Filter {
	if f, ok := storage.(rest.ResetFieldsFilterStrategy); ok {
		return f.GetResetFieldsFilter()
	}
	r, ok := storage.(rest.ResetFieldsStrategy)
	if !ok {
		return nil
	}
	sets := r.GetResetFields()
	if len(sets) == 0 {
		return nil
	}
	out := make(map[fieldpath.APIVersion]fieldpath.Filter, len(sets))
	for v, s := range sets {
		out[v] = fieldpath.NewExcludeSetFilter(s)
	}
	return out
}

// fieldManager is the field manager of a resource's (sub)resource, or nil.
func (h *Handler) fieldManager(res *Resource, subresource string, kind schema.GroupVersionKind) *managedfields.FieldManager {
	if kind != res.GroupVersionKind() {
		return nil
	}
	if res.Custom != nil {
		return res.Custom.FieldManagers[subresource]
	}
	return h.managers[res][subresource]
}

// managerName is the fieldManager parameter, or (as upstream) the client's
// User-Agent up to its first "/".
func managerName(param string, r *http.Request) string {
	if param != "" {
		return param
	}
	ua, _, _ := strings.Cut(r.UserAgent(), "/")
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}
