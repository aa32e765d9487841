package apiserver

import (
	"context"
	"fmt"
	"k8s.io/apiserver/pkg/admission"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// serveUpdate answers PUT on an object or a subresource (status, scale).
func (h *Handler) serveUpdate(w http.ResponseWriter, r *http.Request, res *Resource, u rest.Updater, kind schema.GroupVersionKind, name string) {
	opts := &metav1.UpdateOptions{}
	if err := decodeParams(r.URL.Query(), opts); err != nil {
		h.writeError(w, r, err)
		return
	}
	if err := checkDryRun(opts.DryRun); err != nil {
		h.writeError(w, r, err)
		return
	}
	validation, err := fieldValidation(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	body, err := h.readBody(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	obj, err := h.decodeBody(r, body, kind, validation)
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
		ns, _ := genericapirequest.NamespaceFrom(ctx)
		switch m.GetNamespace() {
		case "":
			m.SetNamespace(ns)
		case ns:
		default:
			h.writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
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
