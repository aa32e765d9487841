package apiserver

import (
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/admission"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// serveCreate answers POST on a collection.
func (h *Handler) serveCreate(w http.ResponseWriter, r *http.Request, res *Resource) {
	opts := &metav1.CreateOptions{}
	obj, err := h.decodeWrite(r, opts, &opts.DryRun, res.GroupVersionKind())
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	if res.Namespaced {
		m, err := meta.Accessor(obj)
		if err != nil {
			h.writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		if err := defaultNamespace(ctx, m); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	if fm := h.fieldManager(res, "", res.GroupVersionKind()); fm != nil {
		live, err := h.creater(ctx).New(res.GroupVersionKind())
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		obj = fm.UpdateNoErrors(live, obj, managerName(opts.FieldManager, r))
	}
	attrs := h.admissionAttrs(r, res, res.GroupVersionKind(), nameOf(obj), obj, nil, admission.Create, opts, len(opts.DryRun) > 0)
	if err := h.admit(ctx, attrs); err != nil {
		h.writeError(w, r, err)
		return
	}
	out, err := res.Store.Create(ctx, obj, h.validateCreate(attrs), opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.writeObject(w, r, http.StatusCreated, res.GroupVersion, out)
}

// serveNamedCreate answers POST on a subresource of a named object
// (pods/binding, pods/eviction).
func (h *Handler) serveNamedCreate(w http.ResponseWriter, r *http.Request, res *Resource, c rest.NamedCreater, kind schema.GroupVersionKind, name string) {
	opts := &metav1.CreateOptions{}
	obj, err := h.decodeWrite(r, opts, &opts.DryRun, kind)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if m, err := meta.Accessor(obj); err == nil {
		if m.GetName() != "" && m.GetName() != name {
			h.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name)))
			return
		}
		if ns, _ := genericapirequest.NamespaceFrom(r.Context()); m.GetNamespace() != "" && m.GetNamespace() != ns {
			h.writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
			return
		}
	}
	attrs := h.admissionAttrs(r, res, kind, name, obj, nil, admission.Create, opts, len(opts.DryRun) > 0)
	if err := h.admit(r.Context(), attrs); err != nil {
		h.writeError(w, r, err)
		return
	}
	out, err := c.Create(r.Context(), name, obj, h.validateCreate(attrs), opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	gv := kind.GroupVersion()
	if _, isStatus := out.(*metav1.Status); isStatus {
		gv = coreV1
	}
	h.writeObject(w, r, http.StatusCreated, gv, out)
}
