package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes"
	nodelisters "k8s.io/client-go/listers/node/v1"

	"berth/internal/errdefs"
)

// RuntimeClassName is the plugin's upstream name.
const RuntimeClassName = "RuntimeClass"

// RuntimeClassConfig configures RuntimeClass.
type RuntimeClassConfig struct {
	// RuntimeClasses lists the classes (informer cache).
	RuntimeClasses nodelisters.RuntimeClassLister
	// Client looks a class up live when the cache does not have it yet.
	Client kubernetes.Interface
}

// RuntimeClass applies a new pod's spec.runtimeClassName: the pod is
// refused when the class does not exist, gets the class's overhead as
// spec.overhead (refused if it set a different one), and gets the class's
// scheduling node selector (refused on a conflicting value) and
// tolerations merged into its own.
type RuntimeClass struct {
	*admission.Handler
	classes nodelisters.RuntimeClassLister
	client  kubernetes.Interface
}

var (
	_ admission.MutationInterface   = (*RuntimeClass)(nil)
	_ admission.ValidationInterface = (*RuntimeClass)(nil)
)

// NewRuntimeClass validates cfg and returns the plugin.
func NewRuntimeClass(cfg RuntimeClassConfig) (*RuntimeClass, error) {
	if cfg.RuntimeClasses == nil || cfg.Client == nil {
		return nil, fmt.Errorf("%s: Config.RuntimeClasses and Config.Client must be set: %w", RuntimeClassName, errdefs.ErrInvalidArgument)
	}
	return &RuntimeClass{Handler: admission.NewHandler(admission.Create), classes: cfg.RuntimeClasses, client: cfg.Client}, nil
}

// Admit sets the pod's overhead and merges the class's scheduling.
func (p *RuntimeClass) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isResource(a, podsResource, "") {
		return nil
	}
	pod, rc, err := p.podAndClass(ctx, a)
	if err != nil || rc == nil {
		return err
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.NewForbidden(a, fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if rc.Scheduling == nil {
		return nil
	}
	if sel := rc.Scheduling.NodeSelector; len(sel) > 0 {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		for k, v := range sel {
			if cur, ok := pod.Spec.NodeSelector[k]; ok && cur != v {
				return admission.NewForbidden(a, fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, cur))
			}
			pod.Spec.NodeSelector[k] = v
		}
	}
	pod.Spec.Tolerations = MergeTolerations(pod.Spec.Tolerations, rc.Scheduling.Tolerations)
	return nil
}

// Validate refuses a pod whose overhead is not its class's (or that has an
// overhead but no class defining one), whatever changed it after Admit.
func (p *RuntimeClass) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isResource(a, podsResource, "") {
		return nil
	}
	pod, rc, err := p.podAndClass(ctx, a)
	if err != nil {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.NewForbidden(a, fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
		return nil
	}
	if pod.Spec.Overhead != nil {
		return admission.NewForbidden(a, fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))
	}
	return nil
}

// podAndClass returns the pod and the class it names (nil when it names
// none); a class missing from the cache is looked up live before the pod
// is refused.
func (p *RuntimeClass) podAndClass(ctx context.Context, a admission.Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	if pod.Spec.RuntimeClassName == nil {
		return pod, nil, nil
	}
	name := *pod.Spec.RuntimeClassName
	rc, err := p.classes.Get(name)
	if apierrors.IsNotFound(err) {
		rc, err = p.client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return pod, nil, admission.NewForbidden(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", name))
		}
	}
	if err != nil {
		return pod, nil, err
	}
	return pod, rc, nil
}

// MergeTolerations returns first and second merged, as upstream merges
// tolerations: a toleration another one already covers (a superset: same
// or empty-Exists key, same or empty effect, a NoExecute period at least
// as long, Exists or an equal value) is dropped; of two equal ones the
// first is kept.
func MergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration{}, first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, m := range merged {
			if tolerationCovers(m, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(t, later) && tolerationCovers(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// tolerationCovers reports whether ss tolerates everything t does.
func tolerationCovers(ss, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(ss, t) {
		return true
	}
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil {
		if t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds {
			return false
		}
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	default:
		return false
	}
}
