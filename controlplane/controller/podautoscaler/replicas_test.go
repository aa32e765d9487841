package podautoscaler

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// hpaPod is a pod requesting cpuReq millicores; ready tells its Ready
// condition (set an hour ago; the pod started two hours ago).
func hpaPod(name string, cpuReq int64, ready bool) *corev1.Pod {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	start := metav1.NewTime(now.Add(-2 * time.Hour))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpuReq, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
}

// starting makes p a pod that started a minute ago (still in the cpu
// initialization period).
func starting(p *corev1.Pod) *corev1.Pod {
	t := metav1.NewTime(now.Add(-time.Minute))
	p.Status.StartTime = &t
	p.Status.Conditions[0].LastTransitionTime = t
	return p
}

func usage(kv ...any) map[string]PodMetric {
	out := map[string]PodMetric{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = PodMetric{Value: int64(kv[i+1].(int)), Timestamp: now, Window: 30 * time.Second}
	}
	return out
}

func pct(n int32) *int32 { return &n }

func TestResourceReplicas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		current int32
		target  *int32
		avg     *int64
		pods    []*corev1.Pod
		metrics map[string]PodMetric
		want    int32
		util    int32
		err     string
	}{
		{name: "at target: no change", current: 2, target: pct(50),
			pods: []*corev1.Pod{hpaPod("a", 1000, true), hpaPod("b", 1000, true)}, metrics: usage("a", 500, "b", 500), want: 2, util: 50},
		{name: "within tolerance: no change", current: 2, target: pct(50),
			pods: []*corev1.Pod{hpaPod("a", 1000, true), hpaPod("b", 1000, true)}, metrics: usage("a", 540, "b", 540), want: 2, util: 54},
		{name: "double the target: double the pods", current: 2, target: pct(50),
			pods: []*corev1.Pod{hpaPod("a", 1000, true), hpaPod("b", 1000, true)}, metrics: usage("a", 1000, "b", 1000), want: 4, util: 100},
		{name: "low usage scales down, rounding up", current: 4, target: pct(50),
			pods:    []*corev1.Pod{hpaPod("a", 1000, true), hpaPod("b", 1000, true), hpaPod("c", 1000, true), hpaPod("d", 1000, true)},
			metrics: usage("a", 100, "b", 100, "c", 100, "d", 100), want: 1, util: 10},
		{name: "a missing pod counts as 100% when scaling down", current: 3, target: pct(50),
			pods:    []*corev1.Pod{hpaPod("a", 1000, true), hpaPod("b", 1000, true), hpaPod("c", 1000, true)},
			metrics: usage("a", 100, "b", 100), want: 3, util: 10},
		{name: "a missing pod counts as 0 when scaling up", current: 3, target: pct(50),
			pods:    []*corev1.Pod{hpaPod("a", 1000, true), hpaPod("b", 1000, true), hpaPod("c", 1000, true)},
			metrics: usage("a", 1500, "b", 1500), want: 6, util: 150},
		{name: "unready pods count as 0 when scaling up", current: 2, target: pct(50),
			pods: []*corev1.Pod{hpaPod("a", 1000, true), starting(hpaPod("b", 1000, false))}, metrics: usage("a", 1000, "b", 900), want: 2, util: 100},
		{name: "a pod unready long after its start counts", current: 2, target: pct(50),
			pods: []*corev1.Pod{hpaPod("a", 1000, true), hpaPod("b", 1000, false)}, metrics: usage("a", 1000, "b", 900), want: 4, util: 95},
		{name: "average value target", current: 2, avg: func() *int64 { v := int64(200); return &v }(),
			pods: []*corev1.Pod{hpaPod("a", 1000, true), hpaPod("b", 1000, true)}, metrics: usage("a", 600, "b", 600), want: 6},
		{name: "no metrics", current: 2, target: pct(50), pods: []*corev1.Pod{hpaPod("a", 1000, true)}, metrics: usage(),
			err: "did not receive metrics for targeted pods (pods might be unready)"},
		{name: "no request", current: 1, target: pct(50), pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}}, metrics: usage("x", 1),
			err: "missing request for cpu in container c of Pod x"},
		{name: "no pods", current: 1, target: pct(50), err: "no pods returned by selector while calculating replica count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ResourceReplicas(ResourceInput{Current: tc.current, Resource: corev1.ResourceCPU, TargetUtilization: tc.target, TargetAverage: tc.avg,
				Pods: tc.pods, Metrics: tc.metrics, Now: now})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Replicas != tc.want || (tc.target != nil && r.Utilization != tc.util) {
				t.Fatalf("replicas %d utilization %d, want %d %d", r.Replicas, r.Utilization, tc.want, tc.util)
			}
		})
	}
}

func policy(sel autoscalingv2.ScalingPolicySelect, window int32, ps ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{SelectPolicy: &sel, StabilizationWindowSeconds: &window, Policies: ps}
}

func TestNormalize(t *testing.T) {
	pods := func(v, period int32) autoscalingv2.HPAScalingPolicy {
		return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: period}
	}
	percent := func(v, period int32) autoscalingv2.HPAScalingPolicy {
		return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: v, PeriodSeconds: period}
	}
	ago := func(s int) time.Time { return now.Add(-time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name    string
		in      NormalizeInput
		want    int32
		limited string
		stable  string
	}{
		{name: "legacy: scale up at most to max(2x, 4)", in: NormalizeInput{Min: 1, Max: 100, Current: 3, Desired: 20},
			want: 6, limited: "ScaleUpLimit", stable: "ReadyForNewScale"},
		{name: "legacy: the max bounds it", in: NormalizeInput{Min: 1, Max: 5, Current: 3, Desired: 20}, want: 5, limited: "TooManyReplicas"},
		{name: "legacy: the min bounds it", in: NormalizeInput{Min: 2, Max: 5, Current: 3, Desired: 1}, want: 2, limited: "TooFewReplicas"},
		{name: "legacy: a higher recommendation in the last 5 minutes holds a scale down",
			in:   NormalizeInput{Min: 1, Max: 10, Current: 5, Desired: 2, Recommendations: []Recommendation{{5, ago(60)}, {3, ago(400)}}},
			want: 5, limited: "DesiredWithinRange", stable: "ScaleDownStabilized"},
		{name: "legacy: recommendations older than 5 minutes do not count",
			in:   NormalizeInput{Min: 1, Max: 10, Current: 5, Desired: 2, Recommendations: []Recommendation{{5, ago(400)}}},
			want: 2, stable: "ReadyForNewScale"},
		{name: "behavior: pods policy limits a scale up",
			in: NormalizeInput{Min: 1, Max: 100, Current: 2, Desired: 10, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: policy(autoscalingv2.MaxChangePolicySelect, 0, pods(2, 60)), ScaleDown: policy(autoscalingv2.MaxChangePolicySelect, 0, percent(100, 15))}},
			want: 4, limited: "ScaleUpLimit"},
		{name: "behavior: the period's earlier scale up counts",
			in: NormalizeInput{Min: 1, Max: 100, Current: 4, Desired: 10, UpEvents: []ScaleEvent{{2, ago(30)}}, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: policy(autoscalingv2.MaxChangePolicySelect, 0, pods(2, 60)), ScaleDown: policy(autoscalingv2.MaxChangePolicySelect, 0, percent(100, 15))}},
			want: 4, limited: "ScaleUpLimit"},
		{name: "behavior: Max picks the larger of two policies",
			in: NormalizeInput{Min: 1, Max: 100, Current: 10, Desired: 40, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: policy(autoscalingv2.MaxChangePolicySelect, 0, pods(4, 15), percent(100, 15)), ScaleDown: policy(autoscalingv2.MaxChangePolicySelect, 0, percent(100, 15))}},
			want: 20, limited: "ScaleUpLimit"},
		{name: "behavior: Min picks the smaller",
			in: NormalizeInput{Min: 1, Max: 100, Current: 10, Desired: 40, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: policy(autoscalingv2.MinChangePolicySelect, 0, pods(4, 15), percent(100, 15)), ScaleDown: policy(autoscalingv2.MaxChangePolicySelect, 0, percent(100, 15))}},
			want: 14, limited: "ScaleUpLimit"},
		{name: "behavior: Disabled scale down keeps the count",
			in: NormalizeInput{Min: 1, Max: 100, Current: 10, Desired: 2, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: policy(autoscalingv2.MaxChangePolicySelect, 0, pods(4, 15)), ScaleDown: policy(autoscalingv2.DisabledPolicySelect, 0, percent(100, 15))}},
			want: 10, limited: "ScaleDownLimit"},
		{name: "behavior: scale-up window takes the lowest recent recommendation",
			in: NormalizeInput{Min: 1, Max: 100, Current: 2, Desired: 8, Recommendations: []Recommendation{{3, ago(10)}}, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: policy(autoscalingv2.MaxChangePolicySelect, 60, pods(10, 15)), ScaleDown: policy(autoscalingv2.MaxChangePolicySelect, 0, percent(100, 15))}},
			want: 3, stable: "ScaleUpStabilized", limited: "DesiredWithinRange"},
		{name: "behavior: percent scale down rounds down",
			in: NormalizeInput{Min: 1, Max: 100, Current: 10, Desired: 1, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: policy(autoscalingv2.MaxChangePolicySelect, 0, pods(4, 15)), ScaleDown: policy(autoscalingv2.MaxChangePolicySelect, 0, percent(50, 60))}},
			want: 5, limited: "ScaleDownLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			got := Normalize(tc.in)
			if got.Replicas != tc.want || (tc.limited != "" && got.LimitedReason != tc.limited) || (tc.stable != "" && got.AbleReason != tc.stable) {
				t.Fatalf("got %d (%s, %s), want %d (%s, %s)", got.Replicas, got.LimitedReason, got.AbleReason, tc.want, tc.limited, tc.stable)
			}
			recorded := false
			for _, r := range got.Recommendations {
				recorded = recorded || (r.Replicas == tc.in.Desired && r.At.Equal(now))
			}
			if !recorded {
				t.Fatalf("recommendation %d not recorded: %v", tc.in.Desired, got.Recommendations)
			}
		})
	}
}
