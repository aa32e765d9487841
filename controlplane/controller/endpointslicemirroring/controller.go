package endpointslicemirroring

import (
	"context"
	"errors"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/controller"
)

// Name is the controller's name (kube-controller-manager's).
const Name = "endpointslice-mirroring"

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller mirrors the Endpoints of Services without selectors.
type Controller struct {
	cfg       Config
	services  corelisters.ServiceLister
	endpoints corelisters.EndpointsLister
	slices    discoverylisters.EndpointSliceLister
	queue     *controller.Queue
}

// New validates cfg and registers the Service, Endpoints and EndpointSlice
// informers; every event queues the Service's namespace/name.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 5); err != nil {
		return nil, err
	}
	inf := cfg.Informers
	svcInf, epInf, sliceInf := inf.Core().V1().Services(), inf.Core().V1().Endpoints(), inf.Discovery().V1().EndpointSlices()
	c := &Controller{
		cfg: cfg, services: svcInf.Lister(), endpoints: epInf.Lister(), slices: sliceInf.Lister(),
		queue: controller.NewQueue(Name, &cfg.Config),
	}
	enqueueSlice := func(s *discoveryv1.EndpointSlice) {
		if s.Labels[discoveryv1.LabelManagedBy] == ManagedBy && s.Labels[discoveryv1.LabelServiceName] != "" {
			c.queue.Add(s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName])
		}
	}
	for inf, h := range map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		svcInf.Informer():   controller.On(controller.AllEvents, c.queue.Enqueue),
		epInf.Informer():    controller.On(controller.AllEvents, c.queue.Enqueue),
		sliceInf.Informer(): controller.On(controller.AllEvents, enqueueSlice),
	} {
		if err := c.queue.Watch(inf, h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run syncs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

// sync mirrors the Endpoints of the Service key into its slices: creates,
// then updates, then deletes.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	existing, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ManagedBy}))
	if err != nil {
		return err
	}
	svc, err := c.services.Services(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	ep, err := c.endpoints.Endpoints(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var desired []*discoveryv1.EndpointSlice
	if Mirrored(svc, ep) {
		desired = Desired(svc, ep)
	}
	plan := Plan(desired, existing)
	var errs []error
	slices := c.cfg.Client.DiscoveryV1().EndpointSlices(ns)
	for _, s := range plan.Create {
		if _, err := slices.Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, err)
		}
	}
	for _, s := range plan.Update {
		if _, err := slices.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range plan.Delete {
		if err := slices.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
