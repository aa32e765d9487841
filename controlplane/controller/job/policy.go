package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// matchPodFailurePolicy applies the first rule of policy matching failed
// pod p: FailJob gives upstream's message, Ignore does not count the
// failure towards backoffLimit, Count and FailIndex (and no match, or no
// policy) count it.
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, p *corev1.Pod) (failJobMessage string, count bool) {
	if policy == nil {
		return "", true
	}
	for i, rule := range policy.Rules {
		var msg string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchExitCodes(&p.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			msg = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, p.Namespace, p.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			cond := matchPodConditions(&p.Status, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			msg = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d", p.Namespace, p.Name, cond.Type, rule.Action, i)
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionIgnore:
			return "", false
		case batchv1.PodFailurePolicyActionFailJob:
			return msg, true
		default:
			return "", true
		}
	}
	return "", true
}

// matchedAction is the action of the first rule of policy matching failed
// pod p ("" when none does).
func matchedAction(policy *batchv1.PodFailurePolicy, p *corev1.Pod) batchv1.PodFailurePolicyAction {
	if policy == nil {
		return ""
	}
	for _, rule := range policy.Rules {
		if (rule.OnExitCodes != nil && matchExitCodes(&p.Status, rule.OnExitCodes) != nil) ||
			(rule.OnExitCodes == nil && rule.OnPodConditions != nil && matchPodConditions(&p.Status, rule.OnPodConditions) != nil) {
			return rule.Action
		}
	}
	return ""
}

// matchExitCodes returns the first terminated container (regular, then
// init) with a non-zero exit code the requirement matches.
func matchExitCodes(st *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			cs := &list[i]
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 || (req.ContainerName != nil && *req.ContainerName != cs.Name) {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) || (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				return cs
			}
		}
	}
	return nil
}

func matchPodConditions(st *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range st.Conditions {
		for _, pat := range patterns {
			if st.Conditions[i].Type == pat.Type && st.Conditions[i].Status == pat.Status {
				return &st.Conditions[i]
			}
		}
	}
	return nil
}

// matchSuccessPolicy reports the first success policy rule the succeeded
// indexes satisfy, with upstream's message.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int, succeeded sets.Set[int]) (string, bool) {
	if policy == nil || succeeded.Len() == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		if rule.SucceededIndexes != nil {
			required := parseIndexes(*rule.SucceededIndexes, completions)
			if required.Len() == 0 {
				continue
			}
			have := required.Intersection(succeeded).Len()
			if have == required.Len() || (rule.SucceededCount != nil && have >= int(*rule.SucceededCount)) {
				return fmt.Sprintf("Matched rules at index %d", i), true
			}
		} else if rule.SucceededCount != nil && succeeded.Len() >= int(*rule.SucceededCount) {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
