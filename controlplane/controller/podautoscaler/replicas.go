package podautoscaler

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Upstream's defaults (kube-controller-manager flags).
const (
	// DefaultTolerance: ratios within 10% of 1 do not scale.
	DefaultTolerance = 0.1
	// cpuInitializationPeriod and delayOfInitialReadinessStatus decide
	// which not-yet-ready pods' cpu samples are ignored.
	cpuInitializationPeriod       = 5 * time.Minute
	delayOfInitialReadinessStatus = 30 * time.Second
)

// PodMetric is one pod's usage of a resource (milli-units) and when it
// was sampled.
type PodMetric struct {
	Value     int64
	Timestamp time.Time
	Window    time.Duration
}

// ResourceInput is what ResourceReplicas computes from: the current
// replicas, the target (utilization percent of requests, or an average
// value in milli-units), the pods the target selects with their usage,
// the container (empty: the whole pod) and the time.
type ResourceInput struct {
	Current           int32
	Resource          corev1.ResourceName
	TargetUtilization *int32
	TargetAverage     *int64
	Container         string
	Pods              []*corev1.Pod
	Metrics           map[string]PodMetric
	Tolerance         float64
	Now               time.Time
}

// ResourceResult is the proposal with the current utilization (percent)
// and raw average (milli-units) for the status.
type ResourceResult struct {
	Replicas           int32
	Utilization        int32
	RawAverage         int64
	ReadyPodCount      int
	IgnoredOrUnready   int
	HasUtilizationData bool
}

// ResourceReplicas proposes a replica count as upstream's replica
// calculator: pods being deleted or failed are skipped; ready pods with
// metrics count; pods without metrics are missing; for cpu, pods that are
// not ready yet (or whose sample predates readiness) are ignored. With no
// missing pods and no scale-up over unready ones, the ratio of usage to
// target within the tolerance keeps the current count, else the ready
// count times the ratio, rounded up. Otherwise missing pods are assumed
// at 100% of their request when scaling down and 0 when scaling up, and
// unready pods at 0 when scaling up; a recomputed ratio that flips
// direction or falls within the tolerance keeps the current count.
func ResourceReplicas(in ResourceInput) (ResourceResult, error) {
	if len(in.Pods) == 0 {
		return ResourceResult{}, fmt.Errorf("no pods returned by selector while calculating replica count")
	}
	tol := in.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	metrics := map[string]int64{}
	requests := map[string]int64{}
	var missing, unready []string
	ready := 0
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if in.TargetUtilization != nil {
			req, err := podRequest(p, in.Container, in.Resource)
			if err != nil {
				return ResourceResult{}, err
			}
			requests[p.Name] = req
		}
		m, ok := in.Metrics[p.Name]
		if !ok {
			missing = append(missing, p.Name)
			continue
		}
		if in.Resource == corev1.ResourceCPU && unreadyForCPU(p, m, in.Now) {
			unready = append(unready, p.Name)
			continue
		}
		metrics[p.Name] = m.Value
		ready++
	}
	if len(metrics) == 0 {
		return ResourceResult{}, fmt.Errorf("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, util, raw := usageRatio(in, metrics, requests)
	res := ResourceResult{Utilization: util, RawAverage: raw, ReadyPodCount: ready, IgnoredOrUnready: len(unready), HasUtilizationData: in.TargetUtilization != nil}
	scaleUpWithUnready := len(unready) > 0 && ratio > 1
	if !scaleUpWithUnready && len(missing) == 0 {
		if math.Abs(1-ratio) <= tol {
			res.Replicas = in.Current
			return res, nil
		}
		res.Replicas = int32(math.Ceil(ratio * float64(len(metrics))))
		return res, nil
	}
	if len(missing) > 0 {
		for _, name := range missing {
			switch {
			case ratio < 1 && in.TargetUtilization != nil:
				metrics[name] = requests[name]
			case ratio < 1:
				metrics[name] = *in.TargetAverage
			default:
				metrics[name] = 0
			}
		}
	}
	if scaleUpWithUnready {
		for _, name := range unready {
			metrics[name] = 0
		}
	}
	newRatio, _, _ := usageRatio(in, metrics, requests)
	if math.Abs(1-newRatio) <= tol || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		res.Replicas = in.Current
		return res, nil
	}
	n := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1 && n > in.Current) || (newRatio > 1 && n < in.Current) {
		n = in.Current
	}
	res.Replicas = n
	return res, nil
}

// usageRatio is usage over target: total usage over total requests
// against the utilization target, or the average against the value.
func usageRatio(in ResourceInput, metrics, requests map[string]int64) (ratio float64, util int32, raw int64) {
	var total, totalReq int64
	for name, v := range metrics {
		total += v
		totalReq += requests[name]
	}
	raw = total / int64(len(metrics))
	if in.TargetUtilization != nil {
		if totalReq == 0 {
			return 0, 0, raw
		}
		util = int32(total * 100 / totalReq)
		return float64(util) / float64(*in.TargetUtilization), util, raw
	}
	return float64(total) / float64(len(metrics)) / float64(*in.TargetAverage), 0, raw
}

// podRequest sums the pod's (or one container's) request of resource.
func podRequest(p *corev1.Pod, container string, resource corev1.ResourceName) (int64, error) {
	var sum int64
	for _, c := range p.Spec.Containers {
		if container != "" && c.Name != container {
			continue
		}
		q, ok := c.Resources.Requests[resource]
		if !ok {
			return 0, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, p.Name)
		}
		sum += q.MilliValue()
	}
	return sum, nil
}

// unreadyForCPU is upstream's rule for ignoring a pod's cpu sample: within
// the cpu initialization period after start, a pod not ready, or whose
// sample was taken before it became ready plus the window; after it, a pod
// that never became ready and turned unready within the readiness delay.
func unreadyForCPU(p *corev1.Pod, m PodMetric, now time.Time) bool {
	if p.Status.Phase == corev1.PodPending {
		return true
	}
	var cond *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			cond = &p.Status.Conditions[i]
		}
	}
	if cond == nil || p.Status.StartTime == nil {
		return true
	}
	start := p.Status.StartTime.Time
	if start.Add(cpuInitializationPeriod).After(now) {
		return cond.Status == corev1.ConditionFalse || m.Timestamp.Before(cond.LastTransitionTime.Time.Add(m.Window))
	}
	return cond.Status == corev1.ConditionFalse && start.Add(delayOfInitialReadinessStatus).After(cond.LastTransitionTime.Time)
}
