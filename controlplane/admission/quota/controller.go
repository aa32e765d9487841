package quota

import (
	"context"
	"fmt"
	"log/slog"
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
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"berth/internal/errdefs"
)

// ControllerConfig configures the quota status controller.
type ControllerConfig struct {
	// Client lists the counted objects other than pods and writes status.
	Client kubernetes.Interface
	// Quotas and Pods are shared informers; the controller adds handlers.
	Quotas coreinformers.ResourceQuotaInformer
	Pods   coreinformers.PodInformer
	// ResyncPeriod recomputes every quota this often (catching deletions of
	// objects other than pods); 0 means 5 minutes.
	ResyncPeriod time.Duration
	// Logger receives retried errors; nil discards them.
	Logger *slog.Logger
}

// Controller keeps every ResourceQuota's status (hard and used) equal to
// the usage of the objects that exist, as upstream's resourcequota
// controller does: on quota changes, on pod changes in the namespace, and
// periodically. Admission charges usage up front; this gives it back.
type Controller struct {
	client kubernetes.Interface
	quotas corelisters.ResourceQuotaLister
	pods   corelisters.PodLister
	synced []cache.InformerSynced
	resync time.Duration
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger
}

// NewController validates cfg and registers the event handlers.
func NewController(cfg ControllerConfig) (*Controller, error) {
	if cfg.Client == nil || cfg.Quotas == nil || cfg.Pods == nil {
		return nil, fmt.Errorf("quota controller: Config.Client, Quotas and Pods must be set: %w", errdefs.ErrInvalidArgument)
	}
	c := &Controller{
		client: cfg.Client,
		quotas: cfg.Quotas.Lister(),
		pods:   cfg.Pods.Lister(),
		synced: []cache.InformerSynced{cfg.Quotas.Informer().HasSynced, cfg.Pods.Informer().HasSynced},
		resync: cfg.ResyncPeriod,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota"}),
		log: cfg.Logger,
	}
	if c.resync == 0 {
		c.resync = 5 * time.Minute
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	enqueueQuota := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := cfg.Quotas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueQuota,
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.ResourceQuota), newObj.(*corev1.ResourceQuota)
			if !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !apiequality.Semantic.DeepEqual(n.Spec.Hard, n.Status.Hard) {
				enqueueQuota(newObj)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("quota controller: quota handler: %w", err)
	}
	podChanged := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			c.enqueueNamespace(pod.Namespace)
		}
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			if IsTerminal(o) != IsTerminal(n) {
				podChanged(newObj)
			}
		},
		DeleteFunc: podChanged,
	}); err != nil {
		return nil, fmt.Errorf("quota controller: pod handler: %w", err)
	}
	return c, nil
}

func (c *Controller) enqueueNamespace(ns string) {
	qs, err := c.quotas.ResourceQuotas(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range qs {
		c.queue.Add(q.Namespace + "/" + q.Name)
	}
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("quota controller: caches did not sync: %w", ctx.Err())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c.processNext(ctx) {
		}
	}()
	ticker := time.NewTicker(c.resync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			c.queue.ShutDown()
			<-done
			return nil
		case <-ticker.C:
			qs, err := c.quotas.List(labels.Everything())
			if err != nil {
				continue
			}
			for _, q := range qs {
				c.queue.Add(q.Namespace + "/" + q.Name)
			}
		}
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		c.log.Warn("sync resource quota", "quota", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
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
	_, err = c.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
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

// producible lists the usage names objects of gr can produce.
func producible(gr schema.GroupResource) []corev1.ResourceName {
	out := []corev1.ResourceName{ObjectCountName(gr)}
	if gr.Group == "" {
		if n, ok := legacyCounts[gr.Resource]; ok {
			out = append(out, n)
		}
		switch gr.Resource {
		case "persistentvolumeclaims":
			out = append(out, corev1.ResourceRequestsStorage)
		case "services":
			out = append(out, corev1.ResourceServicesLoadBalancers, corev1.ResourceServicesNodePorts)
		}
	}
	return out
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
		if Matches(q, p) {
			used = Add(used, Mask(PodUsage(p), Names(q.Spec.Hard)))
		}
	}
	known := map[corev1.ResourceName]bool{}
	for n := range q.Spec.Hard {
		known[n] = isPodUsageName(n)
	}
	if len(q.Spec.Scopes) == 0 && q.Spec.ScopeSelector == nil {
		for gr, list := range counted {
			names := producible(gr)
			if len(Mask(q.Spec.Hard, names)) == 0 {
				continue
			}
			objs, err := list(ctx, c.client, q.Namespace)
			if err != nil {
				return nil, fmt.Errorf("count %s in %s: %w", gr, q.Namespace, err)
			}
			for _, o := range objs {
				used = Add(used, Mask(Usage(gr, o), Names(q.Spec.Hard)))
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
