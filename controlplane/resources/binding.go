package resources

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	apistorage "k8s.io/apiserver/pkg/storage"

	"berth/internal/api/validation"
)

var podsResource = corev1.Resource("pods")

// bindingREST serves pods/binding: it assigns an unbound pod to a node
// (spec.nodeName) and marks it PodScheduled, as the scheduler's bind does.
type bindingREST struct {
	store *genericregistry.Store
}

var _ rest.NamedCreater = &bindingREST{}

// New implements rest.Storage.
func (b *bindingREST) New() runtime.Object { return &corev1.Binding{} }

// Destroy implements rest.Storage.
func (b *bindingREST) Destroy() {}

// Create implements rest.NamedCreater.
func (b *bindingREST) Create(ctx context.Context, name string, obj runtime.Object, _ rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := obj.(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Binding: %T", obj))
	}
	if binding.Name == "" {
		binding.Name = name
	}
	if errs := validation.ValidatePodBinding(binding); len(errs) > 0 {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name, errs)
	}
	key, err := b.store.KeyFunc(ctx, name)
	if err != nil {
		return nil, err
	}
	var pre *apistorage.Preconditions
	if binding.UID != "" || binding.ResourceVersion != "" {
		pre = &apistorage.Preconditions{}
		if binding.UID != "" {
			pre.UID = &binding.UID
		}
		if binding.ResourceVersion != "" {
			pre.ResourceVersion = &binding.ResourceVersion
		}
	}
	dryRun := slices.Contains(opts.DryRun, metav1.DryRunAll)
	err = b.store.Storage.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, pre, func(in runtime.Object, _ apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
		pod, ok := in.(*corev1.Pod)
		if !ok {
			return nil, nil, fmt.Errorf("binding: stored object is a %T", in)
		}
		if pod.DeletionTimestamp != nil {
			return nil, nil, apierrors.NewConflict(podsResource, name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", name))
		}
		if pod.Spec.NodeName != "" {
			return nil, nil, apierrors.NewConflict(podsResource, name, fmt.Errorf("pod %v is already assigned to node %q", name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = binding.Target.Name
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodScheduled(pod)
		return pod, nil, nil
	}, dryRun, nil)
	if err != nil {
		if apistorage.IsNotFound(err) {
			return nil, apierrors.NewNotFound(podsResource, name)
		}
		if apistorage.IsConflict(err) {
			return nil, apierrors.NewConflict(podsResource, name, err)
		}
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess, Code: 201}, nil
}

func setPodScheduled(pod *corev1.Pod) {
	now := metav1.Now()
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodScheduled {
			if c.Status != corev1.ConditionTrue {
				c.Status, c.LastTransitionTime, c.Reason, c.Message = corev1.ConditionTrue, now, "", ""
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now,
	})
}

// evictionREST serves pods/eviction: marks the pod DisruptionTarget=True
// (reason EvictionByEvictionAPI, as upstream: a Job's pod failure policy
// can match it) through /status, then deletes it with the eviction's
// delete options. berth serves no PodDisruptionBudgets yet, so no budget
// can refuse an eviction.
type evictionREST struct {
	store, status *genericregistry.Store
}

var _ rest.NamedCreater = &evictionREST{}

// New implements rest.Storage.
func (e *evictionREST) New() runtime.Object { return &policyv1.Eviction{} }

// Destroy implements rest.Storage.
func (e *evictionREST) Destroy() {}

// Create implements rest.NamedCreater.
func (e *evictionREST) Create(ctx context.Context, name string, obj runtime.Object, _ rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	ev, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an Eviction: %T", obj))
	}
	del := &metav1.DeleteOptions{}
	if ev.DeleteOptions != nil {
		del = ev.DeleteOptions.DeepCopy()
	}
	if len(opts.DryRun) > 0 {
		del.DryRun = opts.DryRun
	}
	if len(del.DryRun) == 0 {
		if err := e.markDisruptionTarget(ctx, name, del); err != nil {
			return nil, err
		}
	}
	if _, _, err := e.store.Delete(ctx, name, rest.ValidateAllObjectFunc, del); err != nil {
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess, Code: 201}, nil
}

// markDisruptionTarget sets the pod's DisruptionTarget condition, checking
// the delete's UID and resourceVersion preconditions against the stored
// pod; a resourceVersion precondition is moved to the updated pod's.
func (e *evictionREST) markDisruptionTarget(ctx context.Context, name string, del *metav1.DeleteOptions) error {
	latest := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		pod := old.(*corev1.Pod).DeepCopy()
		if p := del.Preconditions; p != nil {
			if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
				return nil, apierrors.NewConflict(corev1.Resource("pods"), name,
					fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, pod.UID))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
				return nil, apierrors.NewConflict(corev1.Resource("pods"), name,
					fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, pod.ResourceVersion))
			}
		}
		setDisruptionTarget(pod, metav1.Now())
		return pod, nil
	}
	out, _, err := e.status.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, latest), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if p := del.Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != "" {
		rv := out.(*corev1.Pod).ResourceVersion
		del.Preconditions.ResourceVersion = &rv
	}
	return nil
}

// setDisruptionTarget sets DisruptionTarget=True, EvictionByEvictionAPI
// (the transition time changes only with the status).
func setDisruptionTarget(pod *corev1.Pod, now metav1.Time) {
	cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI",
		Message: "Eviction API: evicting", LastTransitionTime: now}
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			if c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}
