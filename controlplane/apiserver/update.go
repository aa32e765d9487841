package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/admission"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
)

// serveUpdate answers PUT on an object or a subresource (status, scale).
func (h *Handler) serveUpdate(w http.ResponseWriter, r *http.Request, res *Resource, u rest.Updater, kind schema.GroupVersionKind, name string) {
	opts := &metav1.UpdateOptions{}
	obj, err := h.decodeWrite(r, opts, &opts.DryRun, kind)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		h.writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	if m.GetName() != name {
		h.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name)))
		return
	}
	ctx := r.Context()
	if res.Namespaced {
		if err := defaultNamespace(ctx, m); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	var transformers []rest.TransformFunc
	if fm := h.fieldManager(res, subresourceOf(r), kind); fm != nil {
		manager := managerName(opts.FieldManager, r)
		transformers = append(transformers, func(_ context.Context, newObj, liveObj runtime.Object) (runtime.Object, error) {
			return fm.UpdateNoErrors(liveObj, newObj, manager), nil
		})
	}
	dryRun := len(opts.DryRun) > 0
	copts := updateToCreateOptions(opts)
	transformers = append(transformers, h.admitTransform(r, res, kind, name, opts, copts, dryRun))
	createAttrs := h.admissionAttrs(r, res, kind, name, nil, nil, admission.Create, copts, dryRun)
	createValidate := h.validateCreate(createAttrs)
	updateAttrs := h.admissionAttrs(r, res, kind, name, nil, nil, admission.Update, opts, dryRun)
	out, created, err := u.Update(ctx, name, rest.DefaultUpdatedObjectInfo(obj, transformers...), createValidate, h.validateUpdate(updateAttrs), false, opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	h.writeObject(w, r, code, kind.GroupVersion(), out)
}

// updateToCreateOptions are the CreateOptions of an update that creates.
func updateToCreateOptions(o *metav1.UpdateOptions) *metav1.CreateOptions {
	return &metav1.CreateOptions{DryRun: o.DryRun, FieldManager: o.FieldManager, FieldValidation: o.FieldValidation}
}
