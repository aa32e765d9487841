package resources

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// versionView serves objects stored as S in another shape V (another
// version or group of the same kind), as kube-apiserver serves one set of
// objects under several APIs: every object is converted on the way out
// (toView) and in (fromView), and the store's strategy validates what is
// written.
type versionView[S, V runtime.Object] struct {
	store *genericregistry.Store
	// kind is V's group and kind, for errors.
	kind    schema.GroupKind
	newObj  func() V
	newList func() runtime.Object
	// toView converts a stored object (possibly in a watch cache
	// wrapper: see storedAs); fromView a client's.
	toView   func(runtime.Object) (V, error)
	fromView func(V) S
	// table prints V objects; with tableOnStored it prints the stored
	// form (V objects converted back by fromView).
	table         rest.TableConvertor
	tableOnStored bool
	// validate and validateUpdate, when set, check what a client writes
	// in V's shape before it is converted.
	validate       func(ctx context.Context, obj V) field.ErrorList
	validateUpdate func(ctx context.Context, obj, old V) field.ErrorList
}

// New implements rest.Storage.
func (v *versionView[S, V]) New() runtime.Object { return v.newObj() }

// NewList implements rest.Lister.
func (v *versionView[S, V]) NewList() runtime.Object { return v.newList() }

// Destroy implements rest.Storage (the store owns the storage).
func (v *versionView[S, V]) Destroy() {}

// Get implements rest.Getter.
func (v *versionView[S, V]) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := v.store.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return v.out(obj)
}

// List implements rest.Lister.
func (v *versionView[S, V]) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	obj, err := v.store.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return v.outList(obj)
}

// ConvertToTable implements rest.TableConvertor.
func (v *versionView[S, V]) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	if v.tableOnStored {
		obj = v.convertAll(obj, v.store.NewListFunc, func(o runtime.Object) runtime.Object {
			if in, ok := o.(V); ok {
				return v.fromView(in)
			}
			return o
		})
	}
	return v.table.ConvertToTable(ctx, obj, opts)
}

// Watch implements rest.Watcher.
func (v *versionView[S, V]) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	w, err := v.store.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type == watch.Error {
			return ev, true
		}
		out, err := v.out(ev.Object)
		if err != nil {
			return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}, true
		}
		ev.Object = out
		return ev, true
	}), nil
}

// Create implements rest.Creater.
func (v *versionView[S, V]) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	in, err := v.in(obj)
	if err != nil {
		return nil, err
	}
	if v.validate != nil {
		if errs := v.validate(ctx, in); len(errs) > 0 {
			return nil, apierrors.NewInvalid(v.kind, nameOf(in), errs)
		}
	}
	out, err := v.store.Create(ctx, v.fromView(in), createValidation, opts)
	if err != nil {
		return nil, err
	}
	return v.out(out)
}

// Update implements rest.Updater.
func (v *versionView[S, V]) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	out, created, err := v.store.Update(ctx, name, &viewUpdate[S, V]{v: v, inner: objInfo}, createValidation, updateValidation, forceAllowCreate, opts)
	if err != nil {
		return nil, false, err
	}
	o, err := v.out(out)
	return o, created, err
}

// Delete implements rest.GracefulDeleter (a Status passes through).
func (v *versionView[S, V]) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	out, deleted, err := v.store.Delete(ctx, name, deleteValidation, opts)
	if err != nil {
		return nil, false, err
	}
	if _, stored := out.(S); stored {
		o, err := v.out(out)
		return o, deleted, err
	}
	return out, deleted, nil
}

// DeleteCollection implements rest.CollectionDeleter.
func (v *versionView[S, V]) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions, listOpts *metainternalversion.ListOptions) (runtime.Object, error) {
	out, err := v.store.DeleteCollection(ctx, deleteValidation, opts, listOpts)
	if err != nil {
		return nil, err
	}
	return v.outList(out)
}

// out converts a stored object.
func (v *versionView[S, V]) out(obj runtime.Object) (V, error) { return v.toView(obj) }

// storedAs returns a stored object, unwrapped from a watch cache wrapper,
// as an S.
func storedAs[S runtime.Object](obj runtime.Object) (S, error) {
	if c, ok := obj.(runtime.CacheableObject); ok {
		obj = c.GetObject()
	}
	s, ok := obj.(S)
	if !ok {
		return s, fmt.Errorf("view: stored object is a %T, not a %T", obj, s)
	}
	return s, nil
}

// outList converts a stored list.
func (v *versionView[S, V]) outList(obj runtime.Object) (runtime.Object, error) {
	if !meta.IsListType(obj) {
		return nil, fmt.Errorf("%s view: stored list is a %T", v.kind, obj)
	}
	var err error
	out := v.convertAll(obj, v.newList, func(o runtime.Object) runtime.Object {
		conv, cerr := v.out(o)
		if cerr != nil {
			err = cerr
		}
		return conv
	})
	return out, err
}

// convertAll applies conv to obj, or to each item of obj when it is a
// list (into a list newList makes, with obj's list metadata).
func (v *versionView[S, V]) convertAll(obj runtime.Object, newList func() runtime.Object, conv func(runtime.Object) runtime.Object) runtime.Object {
	if !meta.IsListType(obj) {
		return conv(obj)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return conv(obj)
	}
	for i := range items {
		items[i] = conv(items[i])
	}
	out := newList()
	if src, err := meta.ListAccessor(obj); err == nil {
		if dst, err := meta.ListAccessor(out); err == nil {
			dst.SetResourceVersion(src.GetResourceVersion())
			dst.SetContinue(src.GetContinue())
			dst.SetRemainingItemCount(src.GetRemainingItemCount())
		}
	}
	if err := meta.SetList(out, items); err != nil {
		return obj
	}
	return out
}

// in checks that a client's object has V's type.
func (v *versionView[S, V]) in(obj runtime.Object) (V, error) {
	in, ok := obj.(V)
	if !ok {
		return in, apierrors.NewBadRequest(fmt.Sprintf("not a %s: %T", v.kind, obj))
	}
	return in, nil
}

// viewUpdate runs an update written in V's shape on the stored object.
type viewUpdate[S, V runtime.Object] struct {
	v     *versionView[S, V]
	inner rest.UpdatedObjectInfo
}

func (u *viewUpdate[S, V]) Preconditions() *metav1.Preconditions { return u.inner.Preconditions() }

func (u *viewUpdate[S, V]) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	oldView, err := u.v.out(old)
	if err != nil {
		return nil, err
	}
	obj, err := u.inner.UpdatedObject(ctx, oldView)
	if err != nil {
		return nil, err
	}
	in, err := u.v.in(obj)
	if err != nil {
		return nil, err
	}
	if u.v.validateUpdate != nil {
		if errs := u.v.validateUpdate(ctx, in, oldView); len(errs) > 0 {
			return nil, apierrors.NewInvalid(u.v.kind, nameOf(in), errs)
		}
	}
	return u.v.fromView(in), nil
}

func nameOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}
