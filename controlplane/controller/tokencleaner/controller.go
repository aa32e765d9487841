// Package tokencleaner is berth's token cleaner, as upstream's (which
// kubeadm enables): a bootstrap token Secret (kube-system, type
// bootstrap.kubernetes.io/token) is deleted once its expiration has passed,
// so a join token with a TTL is gone, not only refused.
//
// Expiry is the pure decision; Controller watches only those Secrets and
// deletes with a UID precondition.
package tokencleaner

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/controlplane/authentication"
	"berth/controlplane/controller"
)

// Name is the controller's name (in the manager, logs and the queue).
const Name = "tokencleaner"

// DefaultWorkers: one is plenty for a handful of tokens.
const DefaultWorkers = 1

// Expiry is authentication.BootstrapTokenExpiry for bootstrap token
// Secrets not already being deleted; other Secrets never expire.
func Expiry(s *corev1.Secret, now time.Time) (expired bool, wait time.Duration) {
	if s.Type != authentication.BootstrapTokenSecretType || s.DeletionTimestamp != nil {
		return false, 0
	}
	return authentication.BootstrapTokenExpiry(s, now)
}

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller deletes expired bootstrap token Secrets.
type Controller struct {
	cfg     Config
	secrets informers.SharedInformerFactory
	lister  corelisters.SecretLister
	queue   *controller.Queue
}

// New validates cfg and builds an informer of kube-system's bootstrap token
// Secrets only (not the shared factory's: every Secret of the cluster).
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(authentication.BootstrapTokenSecretType)).String()
		}))
	inf := factory.Core().V1().Secrets()
	c := &Controller{cfg: cfg, secrets: factory, lister: inf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	if err := c.queue.Watch(inf.Informer(), controller.On(controller.Added|controller.Updated, c.queue.Enqueue)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run deletes expired tokens until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.secrets.Start(ctx.Done())
	defer c.secrets.Shutdown()
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	s, found, err := controller.Lookup[*corev1.Secret](key, c.lister.Secrets)
	if !found {
		return err
	}
	ns, name := s.Namespace, s.Name
	expired, wait := Expiry(s, c.cfg.Clock.Now())
	if !expired {
		if wait > 0 {
			c.queue.AddAfter(key, wait)
		}
		return nil
	}
	err = c.cfg.Client.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete expired bootstrap token %s: %w", key, err)
	}
	c.cfg.Logger.Info("deleted an expired bootstrap token", "secret", key)
	return nil
}
