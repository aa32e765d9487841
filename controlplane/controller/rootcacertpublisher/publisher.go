// Package rootcacertpublisher keeps the "kube-root-ca.crt" ConfigMap, whose
// "ca.crt" is the cluster CA bundle, in every active namespace (upstream's
// root-ca-cert-publisher controller): created when a namespace appears,
// restored when edited or deleted. Pods read it through the projected
// service-account volume the ServiceAccount admission plugin adds.
package rootcacertpublisher

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// Name is the controller's name.
const Name = "root-ca-cert-publisher"

// ConfigMapName is the published ConfigMap; DataKey holds the CA bundle.
const (
	ConfigMapName = "kube-root-ca.crt"
	DataKey       = "ca.crt"
)

// DescriptionAnnotation explains the ConfigMap, as upstream annotates it.
const DescriptionAnnotation = "kubernetes.io/description"

// description is the annotation's value.
const description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."

// Config configures the controller.
type Config struct {
	controller.Config
	// RootCA is the PEM bundle published as ca.crt; required.
	RootCA []byte
}

// Controller publishes the root CA ConfigMap.
type Controller struct {
	cfg      Config
	nsLister corelisters.NamespaceLister
	cmLister corelisters.ConfigMapLister
	queue    *controller.Queue
}

// New validates cfg and registers Namespace and ConfigMap informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 1); err != nil {
		return nil, err
	}
	if len(cfg.RootCA) == 0 {
		return nil, fmt.Errorf("%s controller config: RootCA is required: %w", Name, errdefs.ErrInvalidArgument)
	}
	nsInf := cfg.Informers.Core().V1().Namespaces()
	cmInf := cfg.Informers.Core().V1().ConfigMaps()
	c := &Controller{cfg: cfg, nsLister: nsInf.Lister(), cmLister: cmInf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	if err := c.queue.Watch(nsInf.Informer(), controller.On(controller.Added|controller.Updated, c.queue.Enqueue)); err != nil {
		return nil, err
	}
	published := func(cm *corev1.ConfigMap) {
		if cm.Name == ConfigMapName {
			c.queue.Add(cm.Namespace)
		}
	}
	if err := c.queue.Watch(cmInf.Informer(), controller.On(controller.Updated|controller.Deleted, published)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run publishes the ConfigMap until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

// Action is what Plan decides.
type Action int

// The actions.
const (
	// Nothing: the ConfigMap is as it should be, or the namespace is gone
	// or terminating.
	Nothing Action = iota
	// Create the ConfigMap.
	Create
	// Update the existing ConfigMap to the returned one.
	Update
)

// Plan decides, for a namespace (nil when gone) and its current ConfigMap
// (nil when missing), what to do; for Create and Update it returns the
// ConfigMap to write. Keys other than DataKey are dropped, as upstream.
func Plan(ns *corev1.Namespace, existing *corev1.ConfigMap, rootCA []byte) (Action, *corev1.ConfigMap) {
	if ns == nil || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return Nothing, nil
	}
	data := map[string]string{DataKey: string(rootCA)}
	if existing == nil {
		return Create, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns.Name, Annotations: map[string]string{DescriptionAnnotation: description}},
			Data:       data,
		}
	}
	if maps.Equal(existing.Data, data) && len(existing.BinaryData) == 0 && existing.Annotations[DescriptionAnnotation] == description {
		return Nothing, nil
	}
	cm := existing.DeepCopy()
	cm.Data, cm.BinaryData = data, nil
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = description
	return Update, cm
}

func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.nsLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	existing, err := c.cmLister.ConfigMaps(name).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		existing, err = nil, nil
	}
	if err != nil {
		return err
	}
	action, cm := Plan(ns, existing, c.cfg.RootCA)
	switch action {
	case Create:
		_, err = c.cfg.Client.CoreV1().ConfigMaps(name).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the informer's update brings it to Plan again
		}
	case Update:
		_, err = c.cfg.Client.CoreV1().ConfigMaps(name).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", actionVerb(action), name, ConfigMapName, err)
	}
	return nil
}

func actionVerb(a Action) string {
	if a == Create {
		return "create configmap"
	}
	return "update configmap"
}
