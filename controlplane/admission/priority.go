package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"

	"berth/internal/errdefs"
)

// PriorityName is the plugin's upstream name.
const PriorityName = "Priority"

// priorityClassesResource is scheduling.k8s.io/v1 priorityclasses.
var priorityClassesResource = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")

// PriorityConfig configures Priority.
type PriorityConfig struct {
	// PriorityClasses lists the classes (informer cache).
	PriorityClasses schedulinglisters.PriorityClassLister
	// Client looks a class up live when the cache does not have it yet.
	Client kubernetes.Interface
}

// Priority resolves a new pod's spec.priorityClassName (or the global
// default class when it names none) to spec.priority and
// spec.preemptionPolicy, refusing a pod that names an unknown class or sets
// a priority other than its class's; an update keeps the old pod's values.
// It also refuses a second globalDefault PriorityClass.
type Priority struct {
	*admission.Handler
	classes schedulinglisters.PriorityClassLister
	client  kubernetes.Interface
}

var (
	_ admission.MutationInterface   = (*Priority)(nil)
	_ admission.ValidationInterface = (*Priority)(nil)
)

// NewPriority validates cfg and returns the plugin.
func NewPriority(cfg PriorityConfig) (*Priority, error) {
	if cfg.PriorityClasses == nil || cfg.Client == nil {
		return nil, fmt.Errorf("%s: Config.PriorityClasses and Config.Client must be set: %w", PriorityName, errdefs.ErrInvalidArgument)
	}
	return &Priority{Handler: admission.NewHandler(admission.Create, admission.Update), classes: cfg.PriorityClasses, client: cfg.Client}, nil
}

// Admit sets a pod's priority and preemption policy.
func (p *Priority) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isResource(a, podsResource, "") {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
	}
	if a.GetOperation() == admission.Update {
		old, ok := a.GetOldObject().(*corev1.Pod)
		if !ok {
			return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
		}
		if pod.Spec.Priority == nil {
			pod.Spec.Priority = old.Spec.Priority
		}
		if pod.Spec.PreemptionPolicy == nil {
			pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
		}
		return nil
	}
	var priority int32
	var policy *corev1.PreemptionPolicy
	if pod.Spec.PriorityClassName == "" {
		dpc, err := p.defaultClass()
		if err != nil {
			return fmt.Errorf("failed to get default priority class: %v", err)
		}
		if dpc != nil {
			pod.Spec.PriorityClassName, priority, policy = dpc.Name, dpc.Value, dpc.PreemptionPolicy
		} else {
			lower := corev1.PreemptLowerPriority
			policy = &lower
		}
	} else {
		pc, err := p.class(ctx, pod.Spec.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return admission.NewForbidden(a, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		if err != nil {
			return fmt.Errorf("failed to get PriorityClass with name %s: %v", pod.Spec.PriorityClassName, err)
		}
		priority, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return admission.NewForbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = &priority
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return admission.NewForbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		v := *policy
		pod.Spec.PreemptionPolicy = &v
	}
	return nil
}

// Validate refuses a globalDefault PriorityClass when another one is
// already the default.
func (p *Priority) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isResource(a, priorityClassesResource, "") {
		return nil
	}
	pc, ok := a.GetObject().(*schedulingv1.PriorityClass)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind PriorityClass but was unable to be converted")
	}
	if !pc.GlobalDefault {
		return nil
	}
	dpc, err := p.defaultClass()
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %v", err)
	}
	if dpc != nil && (a.GetOperation() == admission.Create || dpc.Name != pc.Name) {
		return admission.NewForbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", dpc.Name))
	}
	return nil
}

// defaultClass is the globalDefault class of lowest value, or nil.
func (p *Priority) defaultClass() (*schedulingv1.PriorityClass, error) {
	list, err := p.classes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var dpc *schedulingv1.PriorityClass
	for _, pc := range list {
		if pc.GlobalDefault && (dpc == nil || pc.Value < dpc.Value) {
			dpc = pc
		}
	}
	return dpc, nil
}

// class looks name up in the cache, then live (a class created a moment
// ago may not have reached the informer yet).
func (p *Priority) class(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	pc, err := p.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return p.client.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{})
	}
	return pc, err
}
