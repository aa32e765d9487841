package resources

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// scaleAdapter reads and sets the replica counts of a scalable kind.
type scaleAdapter struct {
	read func(obj runtime.Object) (spec, status int32, selector *metav1.LabelSelector)
	set  func(obj runtime.Object, replicas int32)
}

var deploymentScale = &scaleAdapter{
	read: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
		d := obj.(*appsv1.Deployment)
		return replicasOf(d.Spec.Replicas), d.Status.Replicas, d.Spec.Selector
	},
	set: func(obj runtime.Object, n int32) { obj.(*appsv1.Deployment).Spec.Replicas = &n },
}

var replicaSetScale = &scaleAdapter{
	read: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
		rs := obj.(*appsv1.ReplicaSet)
		return replicasOf(rs.Spec.Replicas), rs.Status.Replicas, rs.Spec.Selector
	},
	set: func(obj runtime.Object, n int32) { obj.(*appsv1.ReplicaSet).Spec.Replicas = &n },
}

var replicationControllerScale = &scaleAdapter{
	read: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
		rc := obj.(*corev1.ReplicationController)
		return replicasOf(rc.Spec.Replicas), rc.Status.Replicas, &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
	},
	set: func(obj runtime.Object, n int32) { obj.(*corev1.ReplicationController).Spec.Replicas = &n },
}

var statefulSetScale = &scaleAdapter{
	read: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
		ss := obj.(*appsv1.StatefulSet)
		return replicasOf(ss.Spec.Replicas), ss.Status.Replicas, ss.Spec.Selector
	},
	set: func(obj runtime.Object, n int32) { obj.(*appsv1.StatefulSet).Spec.Replicas = &n },
}

func replicasOf(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// scaleREST serves the /scale subresource (autoscaling/v1 Scale) of a
// scalable resource; updates change spec.replicas through the main store,
// so generation, validation and resourceVersion conflicts apply.
type scaleREST struct {
	store   *genericregistry.Store
	adapter *scaleAdapter
	gr      schema.GroupResource
}

var (
	_ rest.Getter  = &scaleREST{}
	_ rest.Updater = &scaleREST{}
)

// New implements rest.Storage.
func (s *scaleREST) New() runtime.Object { return &autoscalingv1.Scale{} }

// Destroy implements rest.Storage (the main store owns the storage).
func (s *scaleREST) Destroy() {}

// Get implements rest.Getter.
func (s *scaleREST) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.store.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return s.toScale(obj)
}

// Update implements rest.Updater.
func (s *scaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	out, _, err := s.store.Update(ctx, name, &scaleUpdate{s: s, name: name, inner: objInfo}, rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, opts)
	if err != nil {
		return nil, false, err
	}
	scale, err := s.toScale(out)
	return scale, false, err
}

func (s *scaleREST) toScale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	spec, status, sel := s.adapter.read(obj)
	selector := ""
	if sel != nil {
		ls, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("selector of %s %s: %w", s.gr, m.GetName(), err))
		}
		selector = ls.String()
	}
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}, nil
}

// scaleUpdate turns an update of the Scale into one of the scaled object.
type scaleUpdate struct {
	s     *scaleREST
	name  string
	inner rest.UpdatedObjectInfo
}

func (u *scaleUpdate) Preconditions() *metav1.Preconditions { return u.inner.Preconditions() }

func (u *scaleUpdate) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	oldScale, err := u.s.toScale(old)
	if err != nil {
		return nil, err
	}
	obj, err := u.inner.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	scale, ok := obj.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Scale, got %T", obj))
	}
	gk := autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind()
	var errs field.ErrorList
	if scale.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0"))
	}
	if scale.Name != u.name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), scale.Name, "must match the name of the scaled object"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(gk, u.name, errs)
	}
	out := old.DeepCopyObject()
	u.s.adapter.set(out, scale.Spec.Replicas)
	m, err := meta.Accessor(out)
	if err != nil {
		return nil, err
	}
	// The Scale's resourceVersion (if any) is the precondition for the update.
	m.SetResourceVersion(scale.ResourceVersion)
	return out, nil
}
