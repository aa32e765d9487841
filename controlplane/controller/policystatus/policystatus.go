// Package policystatus is berth's ValidatingAdmissionPolicy status
// controller (upstream's validatingadmissionpolicy-status-controller): each
// policy whose generation is newer than its status.observedGeneration is
// type-checked (k8s.io/apiserver's TypeChecker, the matched kinds' schemas
// read from the apiserver's OpenAPI v3 documents), and the warnings are
// applied to status.typeChecking with the observed generation.
package policystatus

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/discovery/cached/memory"
	listers "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/restmapper"

	"berth/controlplane/controller"
)

// Name is the controller's name, and the field manager of its status writes.
const Name = "validatingadmissionpolicy-status-controller"

// DefaultWorkers: upstream runs one.
const DefaultWorkers = 1

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller writes the policies' type-checking status.
type Controller struct {
	cfg     Config
	lister  listers.ValidatingAdmissionPolicyLister
	queue   *controller.Queue
	checker *validating.TypeChecker
}

// New validates cfg and registers the policies informer.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	inf := cfg.Informers.Admissionregistration().V1().ValidatingAdmissionPolicies()
	disco := cfg.Client.Discovery()
	c := &Controller{cfg: cfg, lister: inf.Lister(), queue: controller.NewQueue(Name, &cfg.Config),
		checker: &validating.TypeChecker{
			SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: disco},
			RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
		}}
	enqueue := func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		if Stale(p) {
			c.queue.Add(p.Name)
		}
	}
	if err := c.queue.Watch(inf.Informer(), controller.On(controller.Added|controller.Updated, enqueue)); err != nil {
		return nil, err
	}
	return c, nil
}

// Stale reports whether p's status lags its spec.
func Stale(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	return p.Generation > p.Status.ObservedGeneration
}

// Run syncs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	p, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || !Stale(p) {
		return err
	}
	warnings := c.checker.Check(p)
	tc := applyv1.TypeChecking()
	for _, w := range warnings {
		tc.WithExpressionWarnings(applyv1.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	// An empty list still marks the check done (typeChecking non-nil).
	if tc.ExpressionWarnings == nil {
		tc.ExpressionWarnings = []applyv1.ExpressionWarningApplyConfiguration{}
	}
	apply := applyv1.ValidatingAdmissionPolicy(p.Name).WithStatus(applyv1.ValidatingAdmissionPolicyStatus().
		WithObservedGeneration(p.Generation).WithTypeChecking(tc))
	_, err = c.cfg.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, apply,
		metav1.ApplyOptions{FieldManager: Name, Force: true})
	return err
}
