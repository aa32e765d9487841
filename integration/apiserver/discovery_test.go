package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/client-go/rest"
)

// TestDiscovery: legacy and aggregated (v2) discovery list the served
// groups, resources, verbs and subresources.
func TestDiscovery(t *testing.T) {
	cs := shared.Client(t)
	groups, resources, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
	}
	for _, want := range []string{"", "apps", "coordination.k8s.io", "events.k8s.io", "discovery.k8s.io", "storage.k8s.io", "rbac.authorization.k8s.io"} {
		if !slices.Contains(names, want) {
			t.Errorf("group %q missing from %v", want, names)
		}
	}
	found := map[string][]string{}
	for _, l := range resources {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = r.Verbs
		}
	}
	for _, want := range []string{"v1/pods", "v1/pods/status", "v1/pods/binding", "v1/pods/eviction", "v1/pods/log", "v1/pods/exec",
		"v1/pods/proxy", "v1/services/proxy", "v1/nodes/proxy",
		"apps/v1/deployments/scale", "apps/v1/replicasets/status", "v1/namespaces/finalize", "coordination.k8s.io/v1/leases"} {
		if _, ok := found[want]; !ok {
			t.Errorf("%s not discovered", want)
		}
	}
	if v := found["v1/pods"]; !slices.Contains(v, "watch") || !slices.Contains(v, "deletecollection") {
		t.Errorf("pods verbs %v", v)
	}
	if v := found["v1/services/proxy"]; !slices.Equal(v, []string{"create", "delete", "get", "patch", "update"}) {
		t.Errorf("services/proxy verbs %v, want upstream's [create delete get patch update]", v)
	}

	// Aggregated discovery, as kubectl asks for it.
	cfg := shared.RESTConfig(t)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, cfg.Host+"/apis", nil)
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
		t.Fatalf("Content-Type %q", ct)
	}
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	for _, g := range list.Items {
		if g.Name != "apps" {
			continue
		}
		for _, r := range g.Versions[0].Resources {
			if r.Resource == "deployments" && len(r.Subresources) == 2 && r.Subresources[0].Subresource == "scale" && r.Subresources[0].ResponseKind.Kind == "Scale" {
				return
			}
		}
	}
	t.Fatalf("aggregated discovery lacks apps/v1 deployments with scale and status: %+v", list.Items)
}
