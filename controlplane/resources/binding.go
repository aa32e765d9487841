package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	apistorage "k8s.io/apiserver/pkg/storage"

	"berth/controlplane/controller"
	"berth/controlplane/controller/disruption"
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

// evictionREST serves pods/eviction as upstream: a pod that is pending,
// finished or already being deleted, or that no PodDisruptionBudget
// covers, is deleted outright; a pod covered by one budget is deleted only
// when the budget allows a disruption (decrementing disruptionsAllowed and
// recording the pod in disruptedPods), or when it is not ready and the
// budget's unhealthyPodEvictionPolicy lets it go; otherwise 429
// TooManyRequests with the DisruptionBudget cause. A deleted pod is first
// marked DisruptionTarget=True (reason EvictionByEvictionAPI: a Job's pod
// failure policy can match it).
type evictionREST struct {
	store, status *genericregistry.Store
	// budgets and budgetStatus are the poddisruptionbudgets store and its
	// /status; nil when budgets are not served.
	budgets, budgetStatus *genericregistry.Store
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
	if ev.Name != "" && ev.Name != name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	del := &metav1.DeleteOptions{}
	if ev.DeleteOptions != nil {
		del = ev.DeleteOptions.DeepCopy()
	}
	if len(opts.DryRun) > 0 {
		del.DryRun = opts.DryRun
	}
	obj, err := e.store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	rvUnset := del.Preconditions == nil || del.Preconditions.ResourceVersion == nil
	// pinned: delete only the pod as read here (a pod that changed since
	// may have become healthy, or been replaced).
	pinned := false
	switch {
	case canIgnoreBudget(pod):
		pinned = pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp == nil
	case e.budgets != nil:
		budgets, err := e.budgetsOf(ctx, pod)
		if err != nil {
			return nil, err
		}
		if len(budgets) > 1 {
			// Upstream answers this Status (500, no reason) as the result.
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
				Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
		}
		if len(budgets) == 1 {
			pdb := budgets[0]
			if unhealthyMayGo(pdb, pod) {
				pinned = true
			} else if err := e.takeDisruption(ctx, pdb.Name, pod.Name, len(del.DryRun) > 0); err != nil {
				return nil, err
			}
		}
	}
	if pinned && rvUnset {
		rv := pod.ResourceVersion
		if del.Preconditions == nil {
			del.Preconditions = &metav1.Preconditions{}
		}
		del.Preconditions.ResourceVersion = &rv
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

// canIgnoreBudget: a pending or finished pod, or one already being
// deleted, is evicted whatever its budget says, as upstream.
func canIgnoreBudget(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// unhealthyMayGo: a pod that is not ready is evicted without using up a
// disruption when the budget's unhealthyPodEvictionPolicy is AlwaysAllow,
// or (IfHealthyBudget, the default) when the budget is met.
func unhealthyMayGo(pdb *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if controller.PodReady(pod) {
		return false
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

// budgetsOf lists the budgets of the pod's namespace whose selector matches it.
func (e *evictionREST) budgetsOf(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	obj, err := e.budgets.List(genericapirequest.WithNamespace(ctx, pod.Namespace), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for i := range obj.(*policyv1.PodDisruptionBudgetList).Items {
		pdb := &obj.(*policyv1.PodDisruptionBudgetList).Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// maxDisruptedPods bounds disruptedPods (upstream's MaxDisruptedPodSize).
const maxDisruptedPods = 2000

// tooManyRequests is upstream's refusal of an eviction the budget does not allow.
func tooManyRequests(retryAfter int, cause string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retryAfter)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}

// takeDisruption uses one of the budget's allowed disruptions for podName
// (compare-and-swap on the budget's status, retried on conflicts by the
// store); a dry run only checks.
func (e *evictionREST) takeDisruption(ctx context.Context, pdbName, podName string, dryRun bool) error {
	var check error
	take := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		pdb := old.(*policyv1.PodDisruptionBudget).DeepCopy()
		st := &pdb.Status
		switch {
		case st.ObservedGeneration < pdb.Generation:
			return nil, tooManyRequests(10, fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name))
		case st.DisruptionsAllowed < 0:
			return nil, apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, fmt.Errorf("pdb disruptions allowed is negative"))
		case len(st.DisruptedPods) > maxDisruptedPods:
			return nil, apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, fmt.Errorf("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
		case st.DisruptionsAllowed == 0:
			return nil, tooManyRequests(0, fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, st.DesiredHealthy, st.CurrentHealthy))
		}
		if dryRun {
			return nil, errDryRunChecked
		}
		st.DisruptionsAllowed--
		if st.DisruptionsAllowed == 0 {
			disruption.SetDisruptionAllowedCondition(st)
		}
		if st.DisruptedPods == nil {
			st.DisruptedPods = map[string]metav1.Time{}
		}
		st.DisruptedPods[podName] = metav1.Now()
		return pdb, nil
	}
	_, _, check = e.budgetStatus.Update(ctx, pdbName, rest.DefaultUpdatedObjectInfo(nil, take), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if errors.Is(check, errDryRunChecked) {
		return nil
	}
	return check
}

// errDryRunChecked ends a dry run's budget update once the budget allowed it.
var errDryRunChecked = errors.New("eviction dry run: budget allows it")

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
