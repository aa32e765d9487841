package apiserver

import (
	"net/http"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
)

// serveAPIVersions answers /api.
func (h *Handler) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	out := &metav1.APIVersions{}
	for _, gv := range h.groups {
		if gv.Group == "" {
			out.Versions = append(out.Versions, gv.Version)
		}
	}
	if h.cfg.ServerAddress != "" {
		out.ServerAddressByClientCIDRs = []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: h.cfg.ServerAddress}}
	}
	h.writeObject(w, r, http.StatusOK, coreV1, out)
}

// serveAPIGroupList answers /apis.
func (h *Handler) serveAPIGroupList(w http.ResponseWriter, r *http.Request) {
	out := &metav1.APIGroupList{}
	for _, g := range h.groupNames() {
		out.Groups = append(out.Groups, h.apiGroup(g))
	}
	out.Groups = append(out.Groups, h.remoteGroups()...)
	h.writeObject(w, r, http.StatusOK, coreV1, out)
}

// serveDiscoveryPath answers /api/v1, /apis/{group} and /apis/{group}/{version}.
func (h *Handler) serveDiscoveryPath(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case parts[0] == "api" && len(parts) == 2:
		h.serveResourceList(w, r, schema.GroupVersion{Version: parts[1]})
		return
	case parts[0] == "apis" && len(parts) == 2:
		for _, g := range h.groupNames() {
			if g == parts[1] {
				grp := h.apiGroup(g)
				h.writeObject(w, r, http.StatusOK, coreV1, &grp)
				return
			}
		}
		for _, grp := range h.remoteGroups() {
			if grp.Name == parts[1] {
				h.writeObject(w, r, http.StatusOK, coreV1, &grp)
				return
			}
		}
	case parts[0] == "apis" && len(parts) == 3:
		h.serveResourceList(w, r, schema.GroupVersion{Group: parts[1], Version: parts[2]})
		return
	}
	h.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, ""))
}

// remoteGroups are the extension apiservers' groups not served here.
func (h *Handler) remoteGroups() []metav1.APIGroup {
	if h.cfg.Aggregator == nil {
		return nil
	}
	local := map[string]bool{}
	for _, g := range h.groupNames() {
		local[g] = true
	}
	var out []metav1.APIGroup
	for _, g := range h.cfg.Aggregator.APIGroups() {
		if !local[g.Name] {
			out = append(out, g)
		}
	}
	return out
}

func (h *Handler) groupNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, gv := range h.groups {
		if gv.Group != "" && !seen[gv.Group] {
			seen[gv.Group] = true
			names = append(names, gv.Group)
		}
	}
	for _, g := range h.dynamicGroups() {
		if !seen[g.Name] {
			seen[g.Name] = true
			names = append(names, g.Name)
		}
	}
	return names
}

func (h *Handler) apiGroup(group string) metav1.APIGroup {
	g := metav1.APIGroup{Name: group}
	for _, gv := range h.groups {
		if gv.Group == group {
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			g.Versions = append(g.Versions, v)
			if g.PreferredVersion.Version == "" {
				g.PreferredVersion = v
			}
		}
	}
	if len(g.Versions) == 0 {
		for _, dg := range h.dynamicGroups() {
			if dg.Name != group {
				continue
			}
			for _, ver := range dg.Versions {
				v := metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + ver, Version: ver}
				g.Versions = append(g.Versions, v)
				if g.PreferredVersion.Version == "" {
					g.PreferredVersion = v
				}
			}
		}
	}
	return g
}

// storageVerbs are the verbs of a resource served by a generic store.
var storageVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func (h *Handler) serveResourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	byName, ok := h.resources[gv]
	if !ok {
		byName = h.dynamicResources(gv)
	}
	if len(byName) == 0 {
		h.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, ""))
		return
	}
	out := &metav1.APIResourceList{GroupVersion: gv.String()}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		res := byName[n]
		out.APIResources = append(out.APIResources, metav1.APIResource{
			Name: res.Resource, SingularName: res.SingularName, Namespaced: res.Namespaced,
			Kind: res.Kind, Verbs: res.discoveryVerbs(), ShortNames: res.ShortNames, Categories: res.Categories,
		})
		subs := make([]string, 0, len(res.Subresources))
		for s := range res.Subresources {
			subs = append(subs, s)
		}
		sort.Strings(subs)
		for _, s := range subs {
			sub := res.Subresources[s]
			ar := metav1.APIResource{Name: res.Resource + "/" + s, Namespaced: res.Namespaced, Kind: sub.Kind.Kind, Verbs: subresourceVerbs(sub)}
			if sub.Kind.GroupVersion() != gv {
				ar.Group, ar.Version = sub.Kind.Group, sub.Kind.Version
			}
			out.APIResources = append(out.APIResources, ar)
		}
	}
	h.writeObject(w, r, http.StatusOK, coreV1, out)
}

func subresourceVerbs(sub Subresource) metav1.Verbs {
	if sub.Connect != nil {
		return sub.ConnectVerbs
	}
	var verbs metav1.Verbs
	if _, ok := sub.Storage.(rest.NamedCreater); ok {
		verbs = append(verbs, "create")
	}
	if _, ok := sub.Storage.(rest.Getter); ok {
		verbs = append(verbs, "get")
	}
	if _, ok := sub.Storage.(storageGetUpdater); ok {
		verbs = append(verbs, "patch")
	}
	if _, ok := sub.Storage.(rest.Updater); ok {
		verbs = append(verbs, "update")
	}
	return verbs
}
