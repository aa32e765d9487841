package endpoints

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/controller"
	"berth/controlplane/controller/endpointslice"
)

// Name is the controller's name (kube-controller-manager's).
const Name = "endpoint"

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller keeps the Endpoints of Services with selectors.
type Controller struct {
	cfg       Config
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	queue     *controller.Queue
	triggers  *endpointslice.TriggerTimes
}

// New validates cfg and registers the Service, Pod and Endpoints informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 5); err != nil {
		return nil, err
	}
	core := cfg.Informers.Core().V1()
	svcInf, podInf, epInf := core.Services(), core.Pods(), core.Endpoints()
	c := &Controller{
		cfg: cfg, services: svcInf.Lister(), pods: podInf.Lister(), endpoints: epInf.Lister(),
		queue: controller.NewQueue(Name, &cfg.Config), triggers: endpointslice.NewTriggerTimes(),
	}
	enqueueOfService := func(ep *corev1.Endpoints) {
		if _, err := svcInf.Lister().Services(ep.Namespace).Get(ep.Name); err == nil {
			c.queue.Enqueue(ep)
		}
	}
	podChanged := func(obj any) {
		pod, ok := controller.Object[*corev1.Pod](obj)
		if !ok {
			return
		}
		svcs, _ := c.services.Services(pod.Namespace).List(labels.Everything())
		for _, s := range svcs {
			if s.Spec.Selector != nil && labels.SelectorFromValidatedSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				c.queue.Add(s.Namespace + "/" + s.Name)
			}
		}
	}
	for inf, h := range map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		svcInf.Informer(): controller.On(controller.AllEvents, c.queue.Enqueue),
		podInf.Informer(): cache.ResourceEventHandlerFuncs{AddFunc: podChanged, UpdateFunc: func(old, cur any) { podChanged(old); podChanged(cur) }, DeleteFunc: podChanged},
		// An edited or deleted Endpoints object of a Service is put back;
		// one without a Service is the user's (the mirroring controller
		// copies it into EndpointSlices when its Service comes).
		epInf.Informer(): cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, cur any) { enqueueOfService(cur.(*corev1.Endpoints)) }, DeleteFunc: c.queue.Enqueue},
	} {
		if err := c.queue.Watch(inf, h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// staleRetry is how soon a sync that met a stale cache is tried again.
const staleRetry = 100 * time.Millisecond

// Run syncs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggers.Forget(key)
		// The apiserver deletes a deleted Service's Endpoints; a leftover
		// goes too, as upstream.
		if _, err := c.endpoints.Endpoints(ns).Get(name); err != nil {
			return nil
		}
		err := c.cfg.Client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil // user-managed Endpoints
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	subsets, wantLabels := Desired(svc, pods)
	trigger, commit := c.triggers.Compute(key, svc, pods)
	cur, err := c.endpoints.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: wantLabels}, Subsets: subsets}
		setTriggerTime(ep, trigger)
		_, err = c.cfg.Client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			c.queue.AddAfter(key, staleRetry)
			return nil
		}
		if err == nil {
			commit()
		}
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(cur.Subsets, subsets) && apiequality.Semantic.DeepEqual(cur.Labels, wantLabels) {
		commit()
		return nil
	}
	upd := cur.DeepCopy()
	upd.Subsets, upd.Labels = subsets, wantLabels
	setTriggerTime(upd, trigger)
	if _, err = c.cfg.Client.CoreV1().Endpoints(ns).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return err
	}
	commit()
	return nil
}

// setTriggerTime sets (or, zero, clears) the Endpoints'
// endpoints.kubernetes.io/last-change-trigger-time, as upstream.
func setTriggerTime(ep *corev1.Endpoints, trigger time.Time) {
	if trigger.IsZero() {
		delete(ep.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	if ep.Annotations == nil {
		ep.Annotations = map[string]string{}
	}
	ep.Annotations[corev1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
}
