// Package podautoscaler is the HorizontalPodAutoscaler controller: every
// sync period it reads each HPA's target through its scale subresource,
// proposes a replica count from the resource metrics of the target's pods
// (the metrics.k8s.io API), stabilizes and rate-limits it (the HPA's
// behavior, or upstream's defaults without one), writes the new scale and
// the HPA's status (current metrics and the AbleToScale, ScalingActive and
// ScalingLimited conditions).
//
// The pure parts are ResourceReplicas and Normalize (table-tested); the
// sync only gathers their inputs and applies their outputs.
package podautoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"berth/controlplane/controller"
)

// Name is the controller's name (upstream's "horizontalpodautoscaling").
const Name = "horizontalpodautoscaling"

// DefaultWorkers is the number of parallel syncs by default.
const DefaultWorkers = 5

// DefaultSyncPeriod is how often each HPA is evaluated (upstream's
// --horizontal-pod-autoscaler-sync-period).
const DefaultSyncPeriod = 15 * time.Second

// Config configures the HPA controller.
type Config struct {
	controller.Config
	// SyncPeriod is how often each HPA is evaluated; 0 is DefaultSyncPeriod.
	SyncPeriod time.Duration
}

// Controller is the HPA controller.
type Controller struct {
	cfg       Config
	hpaLister autoscalinglisters.HorizontalPodAutoscalerLister
	podLister corelisters.PodLister
	queue     *controller.Queue

	mu              sync.Mutex
	recommendations map[string][]Recommendation
	upEvents        map[string][]ScaleEvent
	downEvents      map[string][]ScaleEvent
}

// New validates cfg and registers the HPA and pod informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	hpaInf := cfg.Informers.Autoscaling().V2().HorizontalPodAutoscalers()
	podInf := cfg.Informers.Core().V1().Pods()
	c := &Controller{
		cfg: cfg, hpaLister: hpaInf.Lister(), podLister: podInf.Lister(),
		queue:           controller.NewQueue(Name, &cfg.Config),
		recommendations: map[string][]Recommendation{}, upEvents: map[string][]ScaleEvent{}, downEvents: map[string][]ScaleEvent{},
	}
	if err := c.queue.Watch(hpaInf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: c.queue.Enqueue, UpdateFunc: func(old, cur any) {
			if o, n := old.(*autoscalingv2.HorizontalPodAutoscaler), cur.(*autoscalingv2.HorizontalPodAutoscaler); !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) {
				c.queue.Enqueue(cur)
			}
		},
		DeleteFunc: c.forget,
	}); err != nil {
		return nil, err
	}
	if err := c.queue.Watch(podInf.Informer(), nil); err != nil {
		return nil, err
	}
	return c, nil
}

// Run evaluates HPAs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) forget(obj any) {
	if key, ok := controller.KeyFunc(obj); ok {
		c.mu.Lock()
		delete(c.recommendations, key)
		delete(c.upEvents, key)
		delete(c.downEvents, key)
		c.mu.Unlock()
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	h, err := c.hpaLister.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(cache.ExplicitKey(key))
		return nil
	}
	if err != nil {
		return err
	}
	// Every HPA is evaluated again after the sync period, whatever happens.
	defer c.queue.AddAfter(key, c.cfg.SyncPeriod)
	return c.reconcile(ctx, key, h.DeepCopy())
}

func (c *Controller) reconcile(ctx context.Context, key string, h *autoscalingv2.HorizontalPodAutoscaler) error {
	now := c.cfg.Clock.Now()
	old := h.Status.DeepCopy()
	ref := h.Spec.ScaleTargetRef
	scale, err := c.getScale(ctx, h.Namespace, ref)
	if err != nil {
		msg := fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", err)
		setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", msg, now)
		c.cfg.Recorder.Event(h, corev1.EventTypeWarning, "FailedGetScale", err.Error())
		return errors.Join(err, c.writeStatus(ctx, h, old))
	}
	setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale", now)
	current := scale.Spec.Replicas
	h.Status.CurrentReplicas = scale.Status.Replicas
	minReplicas := int32(1)
	if h.Spec.MinReplicas != nil {
		minReplicas = *h.Spec.MinReplicas
	}
	var desired int32
	var rescaleReason string
	switch {
	case current == 0 && minReplicas != 0:
		desired = 0
		setCondition(h, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", now)
	case current > h.Spec.MaxReplicas:
		desired, rescaleReason = h.Spec.MaxReplicas, "Current number of replicas above Spec.MaxReplicas"
	case current < minReplicas:
		desired, rescaleReason = minReplicas, "Current number of replicas below Spec.MinReplicas"
	default:
		proposal, metricName, statuses, err := c.computeReplicas(ctx, h, scale, current, now)
		h.Status.CurrentMetrics = statuses
		if err != nil {
			setCondition(h, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric", err.Error(), now)
			c.cfg.Recorder.Event(h, corev1.EventTypeWarning, "FailedComputeMetricsReplicas", "invalid metrics ("+err.Error()+")")
			return errors.Join(err, c.writeStatus(ctx, h, old))
		}
		setCondition(h, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound",
			fmt.Sprintf("the HPA was able to successfully calculate a replica count from %s", metricName), now)
		c.mu.Lock()
		n := Normalize(NormalizeInput{Min: minReplicas, Max: h.Spec.MaxReplicas, Behavior: h.Spec.Behavior, Current: current, Desired: proposal,
			Recommendations: c.recommendations[key], UpEvents: c.upEvents[key], DownEvents: c.downEvents[key], Now: now})
		c.recommendations[key] = n.Recommendations
		c.mu.Unlock()
		setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, n.AbleReason, n.AbleMessage, now)
		limited := corev1.ConditionFalse
		if n.Limited {
			limited = corev1.ConditionTrue
		}
		setCondition(h, autoscalingv2.ScalingLimited, limited, n.LimitedReason, n.LimitedMsg, now)
		desired = n.Replicas
		if desired > current {
			rescaleReason = metricName + " above target"
		} else {
			rescaleReason = "All metrics below target"
		}
	}
	if desired != current {
		scale.Spec.Replicas = desired
		if err := c.updateScale(ctx, h.Namespace, ref, scale); err != nil {
			setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err), now)
			c.cfg.Recorder.Eventf(h, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", desired, rescaleReason, err)
			return errors.Join(err, c.writeStatus(ctx, h, old))
		}
		setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired), now)
		c.cfg.Recorder.Eventf(h, corev1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", desired, rescaleReason)
		c.recordScaleEvent(key, current, desired, now)
		t := metav1.NewTime(now)
		h.Status.LastScaleTime = &t
	}
	h.Status.DesiredReplicas = desired
	return c.writeStatus(ctx, h, old)
}

// recordScaleEvent remembers a change for the behavior's rate policies
// (events older than the longest policy period, 30 min, are dropped).
func (c *Controller) recordScaleEvent(key string, from, to int32, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prune := func(evs []ScaleEvent) []ScaleEvent {
		var out []ScaleEvent
		for _, e := range evs {
			if now.Sub(e.At) <= 30*time.Minute {
				out = append(out, e)
			}
		}
		return out
	}
	if to > from {
		c.upEvents[key] = append(prune(c.upEvents[key]), ScaleEvent{Change: to - from, At: now})
	} else {
		c.downEvents[key] = append(prune(c.downEvents[key]), ScaleEvent{Change: from - to, At: now})
	}
}

// computeReplicas runs ResourceReplicas for each resource metric and
// returns the largest proposal, its description and the metric statuses.
func (c *Controller) computeReplicas(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, scale *autoscalingv1.Scale, current int32, now time.Time) (int32, string, []autoscalingv2.MetricStatus, error) {
	sel, err := labels.Parse(scale.Status.Selector)
	if err != nil || scale.Status.Selector == "" {
		return 0, "", nil, fmt.Errorf("the HPA target's scale is missing a selector")
	}
	pods, err := c.podLister.Pods(h.Namespace).List(sel)
	if err != nil {
		return 0, "", nil, err
	}
	var best int32
	var bestName string
	var statuses []autoscalingv2.MetricStatus
	var errs []error
	for _, m := range h.Spec.Metrics {
		var res corev1.ResourceName
		var target autoscalingv2.MetricTarget
		var container string
		switch {
		case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
			res, target = m.Resource.Name, m.Resource.Target
		case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
			res, target, container = m.ContainerResource.Name, m.ContainerResource.Target, m.ContainerResource.Container
		default:
			errs = append(errs, fmt.Errorf("unable to get metric of type %s: only resource metrics are served", m.Type))
			continue
		}
		usage, err := c.podMetrics(ctx, h.Namespace, scale.Status.Selector, res, container)
		if err != nil {
			errs = append(errs, fmt.Errorf("unable to get metrics for resource %s: %w", res, err))
			continue
		}
		in := ResourceInput{Current: current, Resource: res, TargetUtilization: target.AverageUtilization, Container: container, Pods: pods, Metrics: usage, Now: now}
		if target.AverageUtilization == nil && target.AverageValue != nil {
			v := target.AverageValue.MilliValue()
			in.TargetAverage = &v
		}
		if in.TargetUtilization == nil && in.TargetAverage == nil {
			errs = append(errs, fmt.Errorf("invalid resource metric source: neither a utilization target nor a value target was set"))
			continue
		}
		r, err := ResourceReplicas(in)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to get %s utilization: %w", res, err))
			continue
		}
		avg := resource.NewMilliQuantity(r.RawAverage, resource.DecimalSI)
		cur := autoscalingv2.MetricValueStatus{AverageValue: avg}
		name := fmt.Sprintf("%s resource", res)
		if in.TargetUtilization != nil {
			u := r.Utilization
			cur.AverageUtilization = &u
			name = fmt.Sprintf("%s resource utilization (percentage of request)", res)
		}
		if container != "" {
			statuses = append(statuses, autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType,
				ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{Name: res, Container: container, Current: cur}})
			name = fmt.Sprintf("%s container resource utilization (percentage of request)", res)
		} else {
			statuses = append(statuses, autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricStatus{Name: res, Current: cur}})
		}
		if bestName == "" || r.Replicas > best {
			best, bestName = r.Replicas, name
		}
	}
	if bestName == "" {
		return 0, "", statuses, errors.Join(errs...)
	}
	return best, bestName, statuses, nil
}

// podMetrics reads the pods' usage of res from the metrics.k8s.io API (the
// sum over the pod's containers, or the named one), in milli-units.
func (c *Controller) podMetrics(ctx context.Context, ns, selector string, res corev1.ResourceName, container string) (map[string]PodMetric, error) {
	raw, err := c.cfg.Client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", ns, "pods").
		Param("labelSelector", selector).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var list metricsv1beta1.PodMetricsList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decoding pod metrics: %w", err)
	}
	out := map[string]PodMetric{}
	for _, pm := range list.Items {
		var sum int64
		found := false
		for _, cm := range pm.Containers {
			if container != "" && cm.Name != container {
				continue
			}
			if q, ok := cm.Usage[res]; ok {
				sum += q.MilliValue()
				found = true
			}
		}
		if found {
			out[pm.Name] = PodMetric{Value: sum, Timestamp: pm.Timestamp.Time, Window: pm.Window.Duration}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no metrics returned from resource metrics API")
	}
	return out, nil
}

// getScale reads the target's scale subresource (Deployments, ReplicaSets,
// StatefulSets and ReplicationControllers).
func (c *Controller) getScale(ctx context.Context, ns string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, error) {
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		return c.cfg.Client.AppsV1().Deployments(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
	case schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		return c.cfg.Client.AppsV1().ReplicaSets(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		return c.cfg.Client.AppsV1().StatefulSets(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
	case schema.GroupKind{Kind: "ReplicationController"}:
		return c.cfg.Client.CoreV1().ReplicationControllers(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
	}
	return nil, fmt.Errorf("no matches for kind %q in group %q", gk.Kind, gk.Group)
}

func (c *Controller) updateScale(ctx context.Context, ns string, ref autoscalingv2.CrossVersionObjectReference, s *autoscalingv1.Scale) error {
	var err error
	switch schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind() {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		_, err = c.cfg.Client.AppsV1().Deployments(ns).UpdateScale(ctx, ref.Name, s, metav1.UpdateOptions{})
	case schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		_, err = c.cfg.Client.AppsV1().ReplicaSets(ns).UpdateScale(ctx, ref.Name, s, metav1.UpdateOptions{})
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		_, err = c.cfg.Client.AppsV1().StatefulSets(ns).UpdateScale(ctx, ref.Name, s, metav1.UpdateOptions{})
	case schema.GroupKind{Kind: "ReplicationController"}:
		_, err = c.cfg.Client.CoreV1().ReplicationControllers(ns).UpdateScale(ctx, ref.Name, s, metav1.UpdateOptions{})
	}
	return err
}

// setCondition sets a condition, keeping its transition time when the
// status did not change.
func setCondition(h *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) {
	for i := range h.Status.Conditions {
		c := &h.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	h.Status.Conditions = append(h.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now)})
}

// writeStatus writes h's status when it changed.
func (c *Controller) writeStatus(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, old *autoscalingv2.HorizontalPodAutoscalerStatus) error {
	g := h.Generation
	h.Status.ObservedGeneration = &g
	if apiequality.Semantic.DeepEqual(*old, h.Status) {
		return nil
	}
	client := c.cfg.Client.AutoscalingV2().HorizontalPodAutoscalers(h.Namespace)
	_, err := client.UpdateStatus(ctx, h, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// The status is this controller's alone: write it onto a fresh copy
		// (a scale just made must not lose its lastScaleTime).
		fresh, gerr := client.Get(ctx, h.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		fresh.Status = h.Status
		_, err = client.UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update status of hpa %s/%s: %w", h.Namespace, h.Name, err)
	}
	return nil
}
