package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/informers"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"

	"berth/internal/errdefs"
)

// FieldManager is the manager the ensurer writes as (upstream's).
const FieldManager = "api-priority-and-fairness-config-producer-v1"

// EnsurerConfig configures the bootstrap-configuration ensurer.
type EnsurerConfig struct {
	// Client writes the objects.
	Client flowcontrolclient.FlowcontrolV1Interface
	// Informers lists FlowSchemas and PriorityLevelConfigurations; build
	// the ensurer before the factory starts.
	Informers informers.SharedInformerFactory
	// Interval between two reconciliations besides those a deletion or
	// update of an object triggers (upstream: 1 minute, the default).
	Interval time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// Ensurer keeps upstream's mandatory and suggested FlowSchemas and
// PriorityLevelConfigurations in the cluster: at start, every Interval,
// and as soon as one of the objects is deleted or changed (so a deleted
// mandatory object is back at once).
type Ensurer struct {
	cfg     EnsurerConfig
	trigger chan struct{}
	synced  []cache.InformerSynced
}

// NewEnsurer validates cfg and registers its informers' handlers.
func NewEnsurer(cfg EnsurerConfig) (*Ensurer, error) {
	if cfg.Client == nil || cfg.Informers == nil {
		return nil, fmt.Errorf("flowcontrol: ensurer: Client and Informers are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Ensurer{cfg: cfg, trigger: make(chan struct{}, 1)}
	poke := cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ interface{}) { e.poke() },
		DeleteFunc: func(interface{}) { e.poke() },
	}
	fc := cfg.Informers.Flowcontrol().V1()
	for _, inf := range []cache.SharedIndexInformer{fc.FlowSchemas().Informer(), fc.PriorityLevelConfigurations().Informer()} {
		if _, err := inf.AddEventHandler(poke); err != nil {
			return nil, fmt.Errorf("flowcontrol: ensurer: %w", err)
		}
		e.synced = append(e.synced, inf.HasSynced)
	}
	return e, nil
}

func (e *Ensurer) poke() {
	select {
	case e.trigger <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx ends.
func (e *Ensurer) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), e.synced...) {
		return nil
	}
	tick := time.NewTicker(e.cfg.Interval)
	defer tick.Stop()
	for {
		if err := e.Ensure(ctx); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Warn("API priority and fairness bootstrap configuration: will retry", "err", err)
			// Retry soon, as upstream's start-up loop does every second.
			e.poke()
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-e.trigger:
		}
	}
}

// Ensure reconciles once: priority levels first (flow schemas refer to
// them), then flow schemas.
func (e *Ensurer) Ensure(ctx context.Context) error {
	fc := e.cfg.Informers.Flowcontrol().V1()
	levels, err := fc.PriorityLevelConfigurations().Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	schemas, err := fc.FlowSchemas().Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	plSteps := plan(byName(levels), bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations, priorityLevelOps)
	fsSteps := plan(byName(schemas), bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas, flowSchemaOps)
	return errors.Join(
		execute(ctx, e.cfg.Client.PriorityLevelConfigurations(), plSteps),
		execute(ctx, e.cfg.Client.FlowSchemas(), fsSteps),
	)
}

func byName[T object](list []T) map[string]T {
	m := make(map[string]T, len(list))
	for _, o := range list {
		m[o.GetName()] = o
	}
	return m
}

// writer is the typed client of one kind.
type writer[T object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// execute applies steps in order; a race with another writer (already
// exists, conflict, gone) is left to the next reconciliation.
func execute[T object](ctx context.Context, w writer[T], steps []step[T]) error {
	var errs []error
	for _, s := range steps {
		var err error
		switch s.verb {
		case create:
			s.obj.SetResourceVersion("")
			_, err = w.Create(ctx, s.obj, metav1.CreateOptions{FieldManager: FieldManager})
		case update:
			_, err = w.Update(ctx, s.obj, metav1.UpdateOptions{FieldManager: FieldManager})
		case remove:
			rv := s.obj.GetResourceVersion()
			err = w.Delete(ctx, s.obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.verb, s.obj.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

var _ writer[*flowcontrolv1.FlowSchema] = flowcontrolclient.FlowSchemaInterface(nil)
