package resources

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/apiserver"
	"berth/internal/api/convert"
	"berth/internal/api/defaults"
)

// hpaV1View serves autoscaling/v1 HorizontalPodAutoscalers (and their
// status) from the autoscaling/v2 store, as kube-apiserver serves one set
// of HPAs in both versions; objects are converted on the way in and out
// (convert.HPAToV1, convert.HPAFromV1) and the v2 strategy validates them.
type hpaV1View struct {
	store *genericregistry.Store
	table rest.TableConvertor
}

var _ rest.StandardStorage = &hpaV1View{}

// serveHPAV1 adds autoscaling/v1 horizontalpodautoscalers (with status)
// as a view of the autoscaling/v2 resource, when that is served.
func serveHPAV1(set *Set) {
	v2, ok := set.ByGVR[autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")]
	if !ok {
		return
	}
	main := &hpaV1View{store: v2.Store.(*genericregistry.Store), table: v2.Store.(*genericregistry.Store).TableConvertor}
	res := &apiserver.Resource{
		GroupVersion: autoscalingv1.SchemeGroupVersion, Resource: v2.Resource, Kind: v2.Kind, SingularName: v2.SingularName,
		Namespaced: v2.Namespaced, ShortNames: v2.ShortNames, Categories: v2.Categories, Store: main,
		Subresources: map[string]apiserver.Subresource{},
	}
	if st, ok := v2.Subresources["status"]; ok {
		res.Subresources["status"] = apiserver.Subresource{Kind: res.GroupVersionKind(),
			Storage: &hpaV1View{store: st.Storage.(*genericregistry.Store), table: main.table}}
	}
	set.Resources = append(set.Resources, res)
	set.ByGVR[res.GroupVersionResource()] = res
}

// New implements rest.Storage.
func (v *hpaV1View) New() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} }

// NewList implements rest.Lister.
func (v *hpaV1View) NewList() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} }

// Destroy implements rest.Storage (the v2 store owns the storage).
func (v *hpaV1View) Destroy() {}

// Get implements rest.Getter.
func (v *hpaV1View) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := v.store.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return hpaToV1(obj)
}

// List implements rest.Lister.
func (v *hpaV1View) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	obj, err := v.store.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*autoscalingv2.HorizontalPodAutoscalerList)
	if !ok {
		return nil, fmt.Errorf("hpa view: stored list is a %T", obj)
	}
	out := &autoscalingv1.HorizontalPodAutoscalerList{ListMeta: l.ListMeta, Items: make([]autoscalingv1.HorizontalPodAutoscaler, 0, len(l.Items))}
	for i := range l.Items {
		out.Items = append(out.Items, *convert.HPAToV1(&l.Items[i]))
	}
	return out, nil
}

// ConvertToTable implements rest.TableConvertor (the v2 columns, on the
// stored form).
func (v *hpaV1View) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	switch o := obj.(type) {
	case *autoscalingv1.HorizontalPodAutoscaler:
		obj = convert.HPAFromV1(o)
	case *autoscalingv1.HorizontalPodAutoscalerList:
		l := &autoscalingv2.HorizontalPodAutoscalerList{ListMeta: o.ListMeta}
		for i := range o.Items {
			l.Items = append(l.Items, *convert.HPAFromV1(&o.Items[i]))
		}
		obj = l
	}
	return v.table.ConvertToTable(ctx, obj, opts)
}

// Watch implements rest.Watcher.
func (v *hpaV1View) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	w, err := v.store.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type == watch.Error || ev.Type == watch.Bookmark {
			return ev, true
		}
		out, err := hpaToV1(ev.Object)
		if err != nil {
			return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}, true
		}
		ev.Object = out
		return ev, true
	}), nil
}

// Create implements rest.Creater.
func (v *hpaV1View) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	in, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an autoscaling/v1 HorizontalPodAutoscaler: %T", obj))
	}
	out, err := v.store.Create(ctx, hpaFromV1(in), createValidation, opts)
	if err != nil {
		return nil, err
	}
	return hpaToV1(out)
}

// Update implements rest.Updater.
func (v *hpaV1View) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	out, created, err := v.store.Update(ctx, name, &hpaV1Update{inner: objInfo}, createValidation, updateValidation, forceAllowCreate, opts)
	if err != nil {
		return nil, false, err
	}
	o, err := hpaToV1(out)
	return o, created, err
}

// Delete implements rest.GracefulDeleter.
func (v *hpaV1View) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	out, deleted, err := v.store.Delete(ctx, name, deleteValidation, opts)
	if err != nil {
		return nil, false, err
	}
	if _, isHPA := out.(*autoscalingv2.HorizontalPodAutoscaler); isHPA {
		o, err := hpaToV1(out)
		return o, deleted, err
	}
	return out, deleted, nil
}

// DeleteCollection implements rest.CollectionDeleter.
func (v *hpaV1View) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions, listOpts *metainternalversion.ListOptions) (runtime.Object, error) {
	out, err := v.store.DeleteCollection(ctx, deleteValidation, opts, listOpts)
	if err != nil {
		return nil, err
	}
	l, ok := out.(*autoscalingv2.HorizontalPodAutoscalerList)
	if !ok {
		return out, nil
	}
	v1 := &autoscalingv1.HorizontalPodAutoscalerList{ListMeta: l.ListMeta}
	for i := range l.Items {
		v1.Items = append(v1.Items, *convert.HPAToV1(&l.Items[i]))
	}
	return v1, nil
}

// hpaV1Update runs an autoscaling/v1 update on the stored v2 object.
type hpaV1Update struct{ inner rest.UpdatedObjectInfo }

func (u *hpaV1Update) Preconditions() *metav1.Preconditions { return u.inner.Preconditions() }

func (u *hpaV1Update) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	oldV1, err := hpaToV1(old)
	if err != nil {
		return nil, err
	}
	obj, err := u.inner.UpdatedObject(ctx, oldV1)
	if err != nil {
		return nil, err
	}
	in, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an autoscaling/v1 HorizontalPodAutoscaler: %T", obj))
	}
	return hpaFromV1(in), nil
}

func hpaToV1(obj runtime.Object) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	if c, ok := obj.(runtime.CacheableObject); ok {
		obj = c.GetObject()
	}
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil, fmt.Errorf("hpa view: stored object is a %T", obj)
	}
	return convert.HPAToV1(h), nil
}

func hpaFromV1(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := convert.HPAFromV1(in)
	defaults.HorizontalPodAutoscaler(out)
	return out
}
