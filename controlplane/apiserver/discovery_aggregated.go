package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// aggregatedDiscoveryType is the media type of aggregated discovery (v2).
const aggregatedDiscoveryType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated reports whether the Accept header asks for aggregated
// discovery v2 in JSON (clients list it before the legacy types).
func wantsAggregated(r *http.Request) bool {
	for _, clause := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil || mt != "application/json" {
			continue
		}
		if params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList" {
			return true
		}
	}
	return false
}

// serveAggregated answers /api (core: true) or /apis with every group,
// version and resource in one APIGroupDiscoveryList; /apis ends with the
// extension apiservers' groups.
func (h *Handler) serveAggregated(w http.ResponseWriter, r *http.Request, core bool) {
	list := apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{APIVersion: "apidiscovery.k8s.io/v2", Kind: "APIGroupDiscoveryList"}}
	var groups []string
	if core {
		groups = []string{""}
	} else {
		groups = h.groupNames()
	}
	for _, g := range groups {
		item := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g}}
		for _, gv := range h.groups {
			if gv.Group != g {
				continue
			}
			v := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			names := make([]string, 0, len(h.resources[gv]))
			for n := range h.resources[gv] {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				v.Resources = append(v.Resources, resourceDiscovery(h.resources[gv][n]))
			}
			item.Versions = append(item.Versions, v)
		}
		if len(item.Versions) == 0 {
			item.Versions = h.dynamicDiscovery(g)
		}
		list.Items = append(list.Items, item)
	}
	if !core && h.cfg.Aggregator != nil {
		local := map[string]bool{}
		for _, g := range groups {
			local[g] = true
		}
		for _, g := range h.cfg.Aggregator.DiscoveryGroups(r.Context()) {
			if !local[g.Name] {
				list.Items = append(list.Items, g)
			}
		}
	}
	data, err := json.Marshal(list)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", aggregatedDiscoveryType)
	w.Header().Set("Vary", "Accept")
	_, _ = w.Write(data)
}

func resourceDiscovery(res *Resource) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if res.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	gvk := res.GroupVersionKind()
	out := apidiscoveryv2.APIResourceDiscovery{
		Resource: res.Resource, SingularResource: res.SingularName, Scope: scope,
		ResponseKind: &metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Verbs:        res.discoveryVerbs(), ShortNames: res.ShortNames, Categories: res.Categories,
	}
	subs := make([]string, 0, len(res.Subresources))
	for s := range res.Subresources {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	for _, s := range subs {
		sub := res.Subresources[s]
		out.Subresources = append(out.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  s,
			ResponseKind: &metav1.GroupVersionKind{Group: sub.Kind.Group, Version: sub.Kind.Version, Kind: sub.Kind.Kind},
			Verbs:        subresourceVerbs(sub),
		})
	}
	return out
}
