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
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

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
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New validates cfg and registers Namespace and ServiceAccount informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 1); err != nil {
		return nil, err
	}
	nsInf := cfg.Informers.Core().V1().Namespaces()
	saInf := cfg.Informers.Core().V1().ServiceAccounts()
	c := &Controller{
		cfg: cfg, nsLister: nsInf.Lister(), saLister: saInf.Lister(),
		synced: []cache.InformerSynced{nsInf.Informer().HasSynced, saInf.Informer().HasSynced},
		queue:  controller.NewQueue(Name, cfg.Clock),
	}
	nsKey := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			c.queue.Add(ns.Name)
		}
	}
	if _, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: nsKey, UpdateFunc: func(_, cur any) { nsKey(cur) }}); err != nil {
		return nil, fmt.Errorf("serviceaccount controller: %w", err)
	}
	if _, err := saInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.Name == DefaultName {
			c.queue.Add(sa.Namespace)
		}
	}}); err != nil {
		return nil, fmt.Errorf("serviceaccount controller: %w", err)
	}
	return c, nil
}

// Run keeps default ServiceAccounts until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return controller.Loop(ctx, &c.cfg.Config, c.queue, c.synced, c.sync)
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
