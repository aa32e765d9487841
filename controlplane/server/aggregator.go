package server

import (
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"berth/controlplane/aggregator"
	"berth/controlplane/pki"
	"berth/controlplane/resources"
)

// newAggregator builds the aggregation layer: local APIServices for every
// group-version set serves, the proxy to extension apiservers with the
// front-proxy client certificate, and the trust configuration they read.
func newAggregator(rc *rest.Config, creds *pki.Bundle, set *resources.Set, log *slog.Logger) (*aggregator.Aggregator, component, error) {
	var local []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range set.Resources {
		if !seen[r.GroupVersion] {
			seen[r.GroupVersion] = true
			local = append(local, r.GroupVersion)
		}
	}
	agg, err := aggregator.New(aggregator.Config{
		Client: rc, Local: local,
		FrontProxyClientCertPEM: creds.FrontProxyClientCertPEM, FrontProxyClientKeyPEM: creds.FrontProxyClientKeyPEM,
		FrontProxyCAPEM: creds.FrontProxyCAPEM, ClientCAPEM: creds.CAPEM,
		FrontProxyAllowedNames: []string{pki.FrontProxyClientName},
		Logger:                 log.With("component", "aggregator"),
	})
	if err != nil {
		return nil, component{}, err
	}
	return agg, component{name: "aggregator", run: agg.Run}, nil
}
