// Package serviceaccount ensures every active namespace has the "default"
// ServiceAccount (upstream's serviceaccounts controller): it is created when
// a namespace appears and recreated when deleted.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/controlplane/controller"
)

// Name is the controller's name.
const Name = "serviceaccount"

// DefaultName is the ServiceAccount every namespace gets.
const DefaultName = "default"

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller keeps the default ServiceAccount in every namespace.
type Controller struct {
	cfg      Config
	nsLister corelisters.NamespaceLister
	saLister corelisters.ServiceAccountLister
	queue    *controller.Queue
}

// New validates cfg and registers Namespace and ServiceAccount informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 1); err != nil {
		return nil, err
	}
	nsInf := cfg.Informers.Core().V1().Namespaces()
	saInf := cfg.Informers.Core().V1().ServiceAccounts()
	c := &Controller{cfg: cfg, nsLister: nsInf.Lister(), saLister: saInf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	if err := c.queue.Watch(nsInf.Informer(), controller.On(controller.Added|controller.Updated, c.queue.Enqueue)); err != nil {
		return nil, err
	}
	saDeleted := func(sa *corev1.ServiceAccount) {
		if sa.Name == DefaultName {
			c.queue.Add(sa.Namespace)
		}
	}
	if err := c.queue.Watch(saInf.Informer(), controller.On(controller.Deleted, saDeleted)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run keeps default ServiceAccounts until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

// Missing returns the ServiceAccounts ns lacks (has reports whether one
// exists): none for a namespace that is gone or terminating.
func Missing(ns *corev1.Namespace, has func(name string) bool) []string {
	if ns == nil || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	if has(DefaultName) {
		return nil
	}
	return []string{DefaultName}
}

func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.nsLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	has := func(sa string) bool {
		_, err := c.saLister.ServiceAccounts(name).Get(sa)
		return err == nil
	}
	for _, sa := range Missing(ns, has) {
		_, err := c.cfg.Client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: name}}, metav1.CreateOptions{})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		default:
			return fmt.Errorf("create serviceaccount %s/%s: %w", name, sa, err)
		}
	}
	return nil
}
