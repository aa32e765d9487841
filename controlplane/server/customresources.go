package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kube-openapi/pkg/validation/spec"

	berthadmission "berth/controlplane/admission"
	"berth/controlplane/customresource"
	"berth/controlplane/openapi"
	"berth/controlplane/storage"
)

// customResources is the serving of CustomResourceDefinitions' custom
// resources, with the informers its conversion webhooks resolve Services
// through.
type customResources struct {
	serving  *customresource.Serving
	services informers.SharedInformerFactory
}

// newCustomResources builds the custom resource serving on the loopback
// client; models are the static OpenAPI definitions (nil without them).
func newCustomResources(rc *rest.Config, factory *storage.Factory, models map[string]*spec.Schema, log *slog.Logger) (*customResources, error) {
	src := rest.CopyConfig(rc)
	src.UserAgent = "berth-apiextensions"
	client, err := kubernetes.NewForConfig(src)
	if err != nil {
		return nil, fmt.Errorf("server: apiextensions client: %w", err)
	}
	svc := informers.NewSharedInformerFactory(client, 0)
	// Conversion webhooks given as a Service are reached at a ready
	// endpoint, as admission webhooks are (berth runs no service proxy
	// on the server's host).
	resolve := berthadmission.EndpointServiceResolver(svc.Core().V1().Services().Lister(), svc.Discovery().V1().EndpointSlices().Lister())
	serving, err := customresource.New(customresource.Config{
		Client: src, Storage: factory.UnstructuredRESTOptions, ServiceResolver: serviceResolver(resolve),
		StaticModels: models, Logger: log.With("component", "apiextensions"),
	})
	if err != nil {
		return nil, err
	}
	return &customResources{serving: serving, services: svc}, nil
}

// component runs the informers and the CRD controllers.
func (c *customResources) component() component {
	return component{name: "apiextensions", run: func(ctx context.Context) error {
		c.services.Start(ctx.Done())
		defer c.services.Shutdown()
		return c.serving.Run(ctx)
	}}
}

// waitSynced waits for the CRD informer's first list, so custom resources
// are served once clients learn the address.
func (c *customResources) waitSynced(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.serving.HasSynced) {
		return fmt.Errorf("server: CustomResourceDefinitions not synced: %w", ctx.Err())
	}
	return nil
}

// serviceResolver adapts admission's resolver to upstream's webhook.ServiceResolver.
type serviceResolver berthadmission.ServiceResolver

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return r(namespace, name, port)
}

// staticModels are the static OpenAPI definitions, through JSON: the
// converters read extensions (the group-version-kinds) in their decoded form.
func staticModels(docs *openapi.Documents) (map[string]*spec.Schema, error) {
	data, err := json.Marshal(docs.Swagger().Definitions)
	if err != nil {
		return nil, err
	}
	models := map[string]*spec.Schema{}
	if err := json.Unmarshal(data, &models); err != nil {
		return nil, err
	}
	return models, nil
}
