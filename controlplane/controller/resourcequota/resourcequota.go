// Package resourcequota is the ResourceQuota controller: it keeps every
// ResourceQuota's status (hard and used) equal to the usage of the objects
// that exist, as upstream's resourcequota controller does: on quota
// changes, on pod changes in the namespace, and periodically. Admission
// charges usage up front (controlplane/admission/quota); this gives it
// back.
package resourcequota

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/admission/quota"
	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// Name is the controller's name (upstream's "resourcequota").
const Name = "resourcequota"

// Config configures the controller.
type Config struct {
	controller.Config
	// ResyncPeriod recomputes every quota this often (catching deletions of
	// objects other than pods); 0 means 5 minutes.
	ResyncPeriod time.Duration
}

// Controller keeps ResourceQuotas' status.
type Controller struct {
	cfg    Config
	quotas corelisters.ResourceQuotaLister
	pods   corelisters.PodLister
	queue  *controller.Queue
}

// New validates cfg and registers the ResourceQuotas and Pods informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 1); err != nil {
		return nil, err
	}
	if cfg.ResyncPeriod < 0 {
		return nil, fmt.Errorf("%s controller config: ResyncPeriod %v is negative: %w", Name, cfg.ResyncPeriod, errdefs.ErrInvalidArgument)
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = 5 * time.Minute
	}
	quotaInf, podInf := cfg.Informers.Core().V1().ResourceQuotas(), cfg.Informers.Core().V1().Pods()
	c := &Controller{cfg: cfg, quotas: quotaInf.Lister(), pods: podInf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	if err := c.queue.Watch(quotaInf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: c.queue.Enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.ResourceQuota), newObj.(*corev1.ResourceQuota)
			if !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !apiequality.Semantic.DeepEqual(n.Spec.Hard, n.Status.Hard) {
				c.queue.Enqueue(newObj)
			}
		},
	}); err != nil {
		return nil, err
	}
	podGone := controller.On(controller.Deleted, func(p *corev1.Pod) { c.enqueueNamespace(p.Namespace) })
	if err := c.queue.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			if quota.IsTerminal(o) != quota.IsTerminal(n) {
				c.enqueueNamespace(n.Namespace)
			}
		},
		DeleteFunc: podGone.OnDelete,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueueNamespace(ns string) {
	qs, err := c.quotas.ResourceQuotas(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range qs {
		c.queue.Enqueue(q)
	}
}

// Run keeps quotas' status until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	go c.queue.Resync(ctx, c.cfg.ResyncPeriod, func() []string {
		qs, _ := c.quotas.List(labels.Everything())
		keys := make([]string, len(qs))
		for i, q := range qs {
			keys[i] = q.Namespace + "/" + q.Name
		}
		return keys
	})
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	q, err := c.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	used, err := c.Usage(ctx, q)
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(q.Status.Hard, q.Spec.Hard) && apiequality.Semantic.DeepEqual(q.Status.Used, used) {
		return nil
	}
	updated := q.DeepCopy()
	updated.Status.Hard = q.Spec.Hard.DeepCopy()
	updated.Status.Used = used
	_, err = c.cfg.Client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

// counted lists the objects of the group/resources whose usage the
// controller can compute besides pods, through the client.
var counted = map[schema.GroupResource]func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error){
	{Resource: "services"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Resource: "configmaps"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Resource: "secrets"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Resource: "persistentvolumeclaims"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Resource: "replicationcontrollers"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.CoreV1().ReplicationControllers(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Resource: "resourcequotas"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Group: "apps", Resource: "deployments"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Group: "apps", Resource: "replicasets"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Group: "apps", Resource: "statefulsets"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Group: "apps", Resource: "daemonsets"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Group: "batch", Resource: "jobs"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
	{Group: "batch", Resource: "cronjobs"}: func(ctx context.Context, c kubernetes.Interface, ns string) ([]runtime.Object, error) {
		l, err := c.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
		return items(l, err, func(i int) runtime.Object { return &l.Items[i] }, func() int { return len(l.Items) })
	},
}

func items(_ any, err error, at func(int) runtime.Object, n func() int) ([]runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, n())
	for i := 0; i < n(); i++ {
		out = append(out, at(i))
	}
	return out, nil
}

// Usage computes a quota's used list from the objects that exist: pods from
// the pod lister, the other counted kinds through the client. Every name in
// spec.hard gets an entry (zero when nothing uses it) except object counts
// of kinds the controller cannot list.
func (c *Controller) Usage(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	used := corev1.ResourceList{}
	pods, err := c.pods.Pods(q.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if quota.Matches(q, p) {
			used = quota.Add(used, quota.Mask(quota.PodUsage(p), quota.Names(q.Spec.Hard)))
		}
	}
	known := map[corev1.ResourceName]bool{}
	for n := range q.Spec.Hard {
		known[n] = isPodUsageName(n)
	}
	if len(q.Spec.Scopes) == 0 && q.Spec.ScopeSelector == nil {
		for gr, list := range counted {
			names := quota.Producible(gr)
			if len(quota.Mask(q.Spec.Hard, names)) == 0 {
				continue
			}
			objs, err := list(ctx, c.cfg.Client, q.Namespace)
			if err != nil {
				return nil, fmt.Errorf("count %s in %s: %w", gr, q.Namespace, err)
			}
			for _, o := range objs {
				used = quota.Add(used, quota.Mask(quota.Usage(gr, o), quota.Names(q.Spec.Hard)))
			}
			for _, n := range names {
				known[n] = true
			}
		}
	}
	for n := range q.Spec.Hard {
		if _, ok := used[n]; !ok && known[n] {
			used[n] = *resource.NewQuantity(0, resource.DecimalSI)
		}
	}
	return used, nil
}

// isPodUsageName reports whether pods produce usage under name n.
func isPodUsageName(n corev1.ResourceName) bool {
	switch n {
	case corev1.ResourcePods, "count/pods", corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	s := string(n)
	return (strings.HasPrefix(s, "requests.") && n != corev1.ResourceRequestsStorage) || strings.HasPrefix(s, "limits.")
}
