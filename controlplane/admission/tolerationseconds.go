package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

// DefaultTolerationSecondsName is the plugin's upstream name.
const DefaultTolerationSecondsName = "DefaultTolerationSeconds"

// DefaultTolerationSecondsValue is how long a pod stays bound to a node that
// became not-ready or unreachable, unless it says otherwise.
const DefaultTolerationSecondsValue int64 = 300

// DefaultTolerationSeconds adds NoExecute tolerations of the not-ready and
// unreachable taints for 300 s to new pods that tolerate neither.
type DefaultTolerationSeconds struct {
	*admission.Handler
	seconds int64
}

var _ admission.MutationInterface = (*DefaultTolerationSeconds)(nil)

// NewDefaultTolerationSeconds returns the plugin with upstream's 300 s.
func NewDefaultTolerationSeconds() *DefaultTolerationSeconds {
	return &DefaultTolerationSeconds{Handler: admission.NewHandler(admission.Create), seconds: DefaultTolerationSecondsValue}
}

// Admit adds the missing tolerations.
func (d *DefaultTolerationSeconds) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isResource(a, podsResource, "") || a.GetOperation() != admission.Create {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod, got %T", a.GetObject()))
	}
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		noExec := t.Effect == corev1.TaintEffectNoExecute || t.Effect == ""
		if !noExec {
			continue
		}
		if t.Key == corev1.TaintNodeNotReady || t.Key == "" {
			notReady = true
		}
		if t.Key == corev1.TaintNodeUnreachable || t.Key == "" {
			unreachable = true
		}
	}
	add := func(key string) {
		secs := d.seconds
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs,
		})
	}
	if !notReady {
		add(corev1.TaintNodeNotReady)
	}
	if !unreachable {
		add(corev1.TaintNodeUnreachable)
	}
	return nil
}
