package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/endpoints"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
)

// discoveryTTL is how long an extension apiserver's resource list is
// reused before it is fetched again.
const discoveryTTL = time.Minute

// cachedDiscovery is the resource list fetched for one version of an
// APIService.
type cachedDiscovery struct {
	resourceVersion string
	fetched         time.Time
	resources       []apidiscoveryv2.APIResourceDiscovery
}

// remoteGroups are the service-backed APIServices grouped by API group,
// groups and versions in kube-aggregator's order (group priority, then
// version priority).
func (a *Aggregator) remoteGroups() [][]*apiregistrationv1.APIService {
	a.mu.Lock()
	ready := a.ready
	a.mu.Unlock()
	if !ready {
		return nil
	}
	all, err := a.apiSvcs.List(labels.Everything())
	if err != nil {
		return nil
	}
	var remote []*apiregistrationv1.APIService
	for _, svc := range all {
		if svc.Spec.Service != nil && svc.Spec.Group != "" {
			remote = append(remote, svc)
		}
	}
	return helper.SortedByGroupAndVersion(remote)
}

// APIGroups lists the groups extension apiservers serve, for /apis, as
// kube-aggregator lists them: every service-backed APIService, available
// or not, the first version (highest priority) preferred.
func (a *Aggregator) APIGroups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, svcs := range a.remoteGroups() {
		g := metav1.APIGroup{Name: svcs[0].Spec.Group}
		for _, svc := range svcs {
			v := metav1.GroupVersionForDiscovery{GroupVersion: svc.Spec.Group + "/" + svc.Spec.Version, Version: svc.Spec.Version}
			g.Versions = append(g.Versions, v)
		}
		g.PreferredVersion = g.Versions[0]
		out = append(out, g)
	}
	return out
}

// DiscoveryGroups is the aggregated discovery (apidiscovery.k8s.io/v2) of
// the extension apiservers' group-versions: each available one's
// resources from its /apis/GROUP/VERSION, cached per version of the
// APIService for a minute; a version whose list cannot be fetched is
// served from the last fetch marked Stale, or left out.
func (a *Aggregator) DiscoveryGroups(ctx context.Context) []apidiscoveryv2.APIGroupDiscovery {
	var out []apidiscoveryv2.APIGroupDiscovery
	for _, svcs := range a.remoteGroups() {
		g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: svcs[0].Spec.Group}}
		for _, svc := range svcs {
			resources, fresh, ok := a.resources(ctx, svc)
			if !ok {
				continue
			}
			freshness := apidiscoveryv2.DiscoveryFreshnessCurrent
			if !fresh {
				freshness = apidiscoveryv2.DiscoveryFreshnessStale
			}
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: svc.Spec.Version, Resources: resources, Freshness: freshness})
		}
		if len(g.Versions) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// resources returns an APIService's resources, whether they are fresh,
// and whether there are any to serve.
func (a *Aggregator) resources(ctx context.Context, svc *apiregistrationv1.APIService) ([]apidiscoveryv2.APIResourceDiscovery, bool, bool) {
	a.mu.Lock()
	c, cached := a.discovery[svc.Name]
	a.mu.Unlock()
	if cached && c.resourceVersion == svc.ResourceVersion && time.Since(c.fetched) < discoveryTTL {
		return c.resources, true, true
	}
	if !helper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available) {
		return c.resources, false, cached
	}
	resources, err := a.fetchResources(ctx, svc)
	if err != nil {
		a.log.Info("aggregator: fetching an extension apiserver's discovery", "apiservice", svc.Name, "err", err)
		return c.resources, false, cached
	}
	a.mu.Lock()
	a.discovery[svc.Name] = cachedDiscovery{resourceVersion: svc.ResourceVersion, fetched: time.Now(), resources: resources}
	a.mu.Unlock()
	return resources, true, true
}

// fetchResources reads GET /apis/GROUP/VERSION from the APIService's
// extension apiserver as kube-aggregator's discovery checks do (user
// system:kube-aggregator in system:masters).
func (a *Aggregator) fetchResources(ctx context.Context, svc *apiregistrationv1.APIService) ([]apidiscoveryv2.APIResourceDiscovery, error) {
	rt, err := a.transport(svc)
	if err != nil {
		return nil, err
	}
	ref := svc.Spec.Service
	endpoint, err := resolver{a}.ResolveEndpoint(ref.Namespace, ref.Name, *ref.Port)
	if err != nil {
		return nil, err
	}
	endpoint.Path = "/apis/" + svc.Spec.Group + "/" + svc.Spec.Version
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", endpoint, resp.Status)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET %s: %w", endpoint, err)
	}
	return endpoints.ConvertGroupVersionIntoToDiscovery(list.APIResources)
}
