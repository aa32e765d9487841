package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// DefaultDownscaleStabilization is upstream's
// --horizontal-pod-autoscaler-downscale-stabilization (and the scale-down
// window of a behavior that sets none).
const DefaultDownscaleStabilization = 5 * time.Minute

// Recommendation is an unstabilized replica proposal and when it was made.
type Recommendation struct {
	Replicas int32
	At       time.Time
}

// ScaleEvent is a past change of the replica count (positive for scale
// up events, positive counts of removed pods for scale down events).
type ScaleEvent struct {
	Change int32
	At     time.Time
}

// NormalizeInput is what Normalize limits a proposal with.
type NormalizeInput struct {
	Min, Max         int32
	Behavior         *autoscalingv2.HorizontalPodAutoscalerBehavior
	Current, Desired int32
	// Recommendations are the HPA's earlier proposals (Normalize returns
	// them with this one recorded).
	Recommendations      []Recommendation
	UpEvents, DownEvents []ScaleEvent
	Now                  time.Time
}

// Normalized is the limited proposal, the recommendations to keep, and
// the reasons for the AbleToScale and ScalingLimited conditions.
type Normalized struct {
	Replicas                  int32
	Recommendations           []Recommendation
	AbleReason, AbleMessage   string
	LimitedReason, LimitedMsg string
	Limited                   bool
}

// Normalize stabilizes and limits a proposal as upstream: without a
// behavior, the highest proposal of the last five minutes (scale-down
// stabilization), then at most max(2×current, 4) and within [min, max];
// with one, the scale-up window's lowest and the scale-down window's
// highest proposal bound it around the current count, and the policies'
// rates over their periods (Max, Min or Disabled) limit the change.
func Normalize(in NormalizeInput) Normalized {
	if in.Behavior == nil {
		return normalizeLegacy(in)
	}
	up := in.Behavior.ScaleUp
	down := in.Behavior.ScaleDown
	upWindow := time.Duration(0)
	if up != nil && up.StabilizationWindowSeconds != nil {
		upWindow = time.Duration(*up.StabilizationWindowSeconds) * time.Second
	}
	downWindow := DefaultDownscaleStabilization
	if down != nil && down.StabilizationWindowSeconds != nil {
		downWindow = time.Duration(*down.StabilizationWindowSeconds) * time.Second
	}
	upRec, downRec := in.Desired, in.Desired
	upCutoff, downCutoff := in.Now.Add(-upWindow), in.Now.Add(-downWindow)
	old := -1
	for i, r := range in.Recommendations {
		if r.At.After(upCutoff) {
			upRec = min(upRec, r.Replicas)
		}
		if r.At.After(downCutoff) {
			downRec = max(downRec, r.Replicas)
		}
		if r.At.Before(upCutoff) && r.At.Before(downCutoff) {
			old = i
		}
	}
	stabilized := max(in.Current, upRec)
	stabilized = min(stabilized, downRec)
	out := Normalized{Recommendations: record(in.Recommendations, old, Recommendation{in.Desired, in.Now})}
	switch {
	case stabilized == in.Desired:
		out.AbleReason, out.AbleMessage = "ReadyForNewScale", "recommended size matches current size"
	case stabilized < in.Desired:
		out.AbleReason, out.AbleMessage = "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	default:
		out.AbleReason, out.AbleMessage = "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
	}
	replicas := stabilized
	out.LimitedReason, out.LimitedMsg = "DesiredWithinRange", "the desired count is within the acceptable range"
	switch {
	case stabilized > in.Current:
		limit := max(scaleUpLimit(in.Current, in.UpEvents, in.DownEvents, up, in.Now), in.Current)
		reason, msg := "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		if in.Max <= limit {
			limit, reason, msg = in.Max, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		}
		if stabilized > limit {
			replicas, out.LimitedReason, out.LimitedMsg = limit, reason, msg
		}
	case stabilized < in.Current:
		limit := min(scaleDownLimit(in.Current, in.UpEvents, in.DownEvents, down, in.Now), in.Current)
		reason, msg := "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		if in.Min >= limit {
			limit, reason, msg = in.Min, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		}
		if stabilized < limit {
			replicas, out.LimitedReason, out.LimitedMsg = limit, reason, msg
		}
	}
	out.Replicas = replicas
	out.Limited = replicas != stabilized
	return out
}

func record(recs []Recommendation, old int, r Recommendation) []Recommendation {
	out := append([]Recommendation(nil), recs...)
	if old >= 0 {
		out[old] = r
		return out
	}
	return append(out, r)
}

func normalizeLegacy(in NormalizeInput) Normalized {
	stabilized := in.Desired
	cutoff := in.Now.Add(-DefaultDownscaleStabilization)
	old := -1
	for i, r := range in.Recommendations {
		if r.At.Before(cutoff) {
			old = i
		} else if r.Replicas > stabilized {
			stabilized = r.Replicas
		}
	}
	out := Normalized{Recommendations: record(in.Recommendations, old, Recommendation{in.Desired, in.Now})}
	if stabilized == in.Desired {
		out.AbleReason, out.AbleMessage = "ReadyForNewScale", "recommended size matches current size"
	} else {
		out.AbleReason, out.AbleMessage = "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
	}
	maxAllowed := max(2*in.Current, 4)
	reason, msg := "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	if in.Max <= maxAllowed {
		maxAllowed, reason, msg = in.Max, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	}
	switch {
	case stabilized < in.Min:
		out.Replicas, out.LimitedReason, out.LimitedMsg = in.Min, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case stabilized > maxAllowed:
		out.Replicas, out.LimitedReason, out.LimitedMsg = maxAllowed, reason, msg
	default:
		out.Replicas, out.LimitedReason, out.LimitedMsg = stabilized, "DesiredWithinRange", "the desired count is within the acceptable range"
	}
	out.Limited = out.Replicas != stabilized
	return out
}

// changeInPeriod sums the changes of events within period before now.
func changeInPeriod(periodSeconds int32, events []ScaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.At.After(cutoff) {
			n += e.Change
		}
	}
	return n
}

func scaleUpLimit(current int32, up, down []ScaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	if rules == nil || rules.SelectPolicy == nil {
		return math.MaxInt32
	}
	if *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MinInt32), func(a, b int32) int32 { return max(a, b) }
	if *rules.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MaxInt32, func(a, b int32) int32 { return min(a, b) }
	}
	for _, p := range rules.Policies {
		start := current - changeInPeriod(p.PeriodSeconds, up, now) + changeInPeriod(p.PeriodSeconds, down, now)
		var proposed int32
		if p.Type == autoscalingv2.PodsScalingPolicy {
			proposed = start + p.Value
		} else {
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

func scaleDownLimit(current int32, up, down []ScaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	if rules == nil || rules.SelectPolicy == nil {
		return math.MinInt32
	}
	if *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MaxInt32), func(a, b int32) int32 { return min(a, b) }
	if *rules.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MinInt32, func(a, b int32) int32 { return max(a, b) }
	}
	for _, p := range rules.Policies {
		start := current - changeInPeriod(p.PeriodSeconds, up, now) + changeInPeriod(p.PeriodSeconds, down, now)
		var proposed int32
		if p.Type == autoscalingv2.PodsScalingPolicy {
			proposed = start - p.Value
		} else {
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}
