// Package clusterroleaggregation is the ClusterRole aggregation
// controller: it keeps the rules of every ClusterRole with an
// aggregationRule equal to rbac.AggregatedRules, as upstream's
// clusterrole-aggregation controller does.
package clusterroleaggregation

import (
	"context"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"

	"berth/controlplane/authorization/rbac"
	"berth/controlplane/controller"
)

// Name is the controller's name (upstream's "clusterrole-aggregation").
const Name = "clusterrole-aggregation"

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller aggregates ClusterRoles.
type Controller struct {
	cfg    Config
	lister rbaclisters.ClusterRoleLister
	queue  *controller.Queue
}

// New validates cfg and registers the ClusterRoles informer.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 1); err != nil {
		return nil, err
	}
	inf := cfg.Informers.Rbac().V1().ClusterRoles()
	c := &Controller{cfg: cfg, lister: inf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	// Any change to any ClusterRole (its labels or its rules) may change
	// what the aggregated ones hold.
	if err := c.queue.Watch(inf.Informer(), controller.On(controller.AllEvents, func(any) { c.enqueueAggregated() })); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueueAggregated queues every aggregated ClusterRole.
func (c *Controller) enqueueAggregated() {
	roles, err := c.lister.List(labels.Everything())
	if err != nil {
		c.cfg.Logger.Error("list clusterroles", "err", err)
		return
	}
	for _, r := range roles {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Run aggregates until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

// sync writes the aggregated rules of one ClusterRole when they differ.
func (c *Controller) sync(ctx context.Context, name string) error {
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
	rules, err := rbac.AggregatedRules(role, all)
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
	_, err = c.cfg.Client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{})
	return err
}
