package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/labels"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"berth/controlplane/apiserver"
	"berth/controlplane/metricsapi"
	"berth/controlplane/resources"
)

// metricsAPIComponent serves metrics.k8s.io/v1beta1 from the node agents'
// resource metrics (controlplane/metricsapi): it adds the nodes and pods
// metrics resources to set and returns the scraper's component.
func metricsAPIComponent(set *resources.Set, transport http.RoundTripper, resolution time.Duration, log *slog.Logger) (component, error) {
	nodes := set.ByGVR[corev1.SchemeGroupVersion.WithResource("nodes")].Store
	pods := set.ByGVR[corev1.SchemeGroupVersion.WithResource("pods")].Store
	objects := metricsapi.Objects{
		Nodes: func(ctx context.Context, sel labels.Selector) ([]corev1.Node, error) {
			list, err := nodes.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{LabelSelector: sel})
			if err != nil {
				return nil, err
			}
			return list.(*corev1.NodeList).Items, nil
		},
		Pods: func(ctx context.Context, ns string, sel labels.Selector) ([]corev1.Pod, error) {
			list, err := pods.List(genericapirequest.WithNamespace(ctx, ns), &metainternalversion.ListOptions{LabelSelector: sel})
			if err != nil {
				return nil, err
			}
			return list.(*corev1.PodList).Items, nil
		},
	}
	scraper, err := metricsapi.NewScraper(metricsapi.Config{
		Nodes:     func(ctx context.Context) ([]corev1.Node, error) { return objects.Nodes(ctx, labels.Everything()) },
		Address:   resources.AgentAddress,
		Transport: transport, Resolution: resolution, Logger: log.With("component", "metrics-api"),
	})
	if err != nil {
		return component{}, err
	}
	nodeREST, podREST := metricsapi.NewREST(scraper, objects)
	gv := metricsv1beta1.SchemeGroupVersion
	for _, res := range []*apiserver.Resource{
		{GroupVersion: gv, Resource: "nodes", Kind: "NodeMetrics", SingularName: "", Store: nodeREST, Verbs: []string{"get", "list"}},
		{GroupVersion: gv, Resource: "pods", Kind: "PodMetrics", SingularName: "", Namespaced: true, Store: podREST, Verbs: []string{"get", "list"}},
	} {
		res.Subresources = map[string]apiserver.Subresource{}
		set.Resources = append(set.Resources, res)
		set.ByGVR[res.GroupVersionResource()] = res
	}
	return component{name: "metrics-api", run: scraper.Run}, nil
}
