package rbac

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"berth/internal/errdefs"
)

// AggregatedRules computes the rules an aggregated ClusterRole must hold: the
// rules of every other ClusterRole matched by one of its aggregationRule's
// clusterRoleSelectors, in ClusterRole name order, each rule once. A role
// without an aggregationRule gets nil.
func AggregatedRules(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	if role.AggregationRule == nil {
		return nil, nil
	}
	sorted := append([]*rbacv1.ClusterRole(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var rules []rbacv1.PolicyRule
	seen := map[string]bool{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %q: aggregationRule.clusterRoleSelectors[%d]: %v: %w", role.Name, i, err, errdefs.ErrInvalidArgument)
		}
		for _, other := range sorted {
			if other.Name == role.Name || seen[other.Name] || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			seen[other.Name] = true
			for _, r := range other.Rules {
				if !containsRule(rules, r) {
					rules = append(rules, *r.DeepCopy())
				}
			}
		}
	}
	return rules, nil
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for i := range rules {
		if apiequality.Semantic.DeepEqual(rules[i], r) {
			return true
		}
	}
	return false
}

// AggregationConfig configures the ClusterRole aggregation controller.
type AggregationConfig struct {
	// Client writes the aggregated ClusterRoles.
	Client kubernetes.Interface
	// ClusterRoles is the shared ClusterRole informer; the controller adds
	// its event handler in NewAggregationController.
	ClusterRoles rbacinformers.ClusterRoleInformer
	// Logger receives errors that are retried; nil discards them.
	Logger *slog.Logger
}

// AggregationController keeps the rules of every ClusterRole with an
// aggregationRule equal to AggregatedRules, as upstream's
// clusterrole-aggregation controller does.
type AggregationController struct {
	client kubernetes.Interface
	lister rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger
}

// NewAggregationController validates cfg and registers the controller's
// event handler on the ClusterRole informer.
func NewAggregationController(cfg AggregationConfig) (*AggregationController, error) {
	if cfg.Client == nil || cfg.ClusterRoles == nil {
		return nil, fmt.Errorf("rbac aggregation: Config.Client and Config.ClusterRoles must be set: %w", errdefs.ErrInvalidArgument)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &AggregationController{
		client: cfg.Client,
		lister: cfg.ClusterRoles.Lister(),
		synced: cfg.ClusterRoles.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "clusterrole-aggregation"}),
		log: log,
	}
	_, err := cfg.ClusterRoles.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAggregated() },
		UpdateFunc: func(any, any) { c.enqueueAggregated() },
		DeleteFunc: func(any) { c.enqueueAggregated() },
	})
	if err != nil {
		return nil, fmt.Errorf("rbac aggregation: add event handler: %w", err)
	}
	return c, nil
}

// enqueueAggregated queues every aggregated ClusterRole: any change to any
// ClusterRole (its labels or its rules) may change what they aggregate.
func (c *AggregationController) enqueueAggregated() {
	roles, err := c.lister.List(labels.Everything())
	if err != nil {
		c.log.Error("list clusterroles", "err", err)
		return
	}
	for _, r := range roles {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Run processes the queue until ctx ends; it returns after the worker stops.
func (c *AggregationController) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return fmt.Errorf("rbac aggregation: clusterrole cache did not sync: %w", ctx.Err())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c.processNext(ctx) {
		}
	}()
	<-ctx.Done()
	c.queue.ShutDown()
	<-done
	return nil
}

func (c *AggregationController) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(ctx, name); err != nil {
		c.log.Warn("aggregate clusterrole", "name", name, "err", err)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// sync writes the aggregated rules of one ClusterRole when they differ.
func (c *AggregationController) sync(ctx context.Context, name string) error {
	role, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	rules, err := AggregatedRules(role, all)
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(rules, role.Rules) || (len(rules) == 0 && len(role.Rules) == 0) {
		return nil
	}
	updated := role.DeepCopy()
	updated.Rules = rules
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = c.client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{})
	return err
}
