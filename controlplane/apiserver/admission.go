package apiserver

import (
	"context"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// admissionAttrs describes a request to the admission chain: the
// resource and subresource of the URL, the kind exchanged, the operation,
// the new and old objects (nil where not known yet), the options and dryRun.
func (h *Handler) admissionAttrs(r *http.Request, res *Resource, kind schema.GroupVersionKind, name string, obj, old runtime.Object, op admission.Operation, opts runtime.Object, dryRun bool) admission.Attributes {
	ctx := r.Context()
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	u, _ := genericapirequest.UserFrom(ctx)
	return admission.NewAttributesRecord(obj, old, kind, ns, name, res.GroupVersionResource(), subresourceOf(r), op, opts, dryRun, u)
}

// admit runs the mutating phase of the admission chain (a no-op without one).
func (h *Handler) admit(ctx context.Context, a admission.Attributes) error {
	m, ok := h.cfg.Admission.(admission.MutationInterface)
	if !ok || !m.Handles(a.GetOperation()) {
		return nil
	}
	return m.Admit(ctx, a, h.admissionObjects(a))
}

// admitConnect runs a connect subresource's request through both phases
// of the admission chain, as upstream's connecters: operation CONNECT, the
// options object (PodExecOptions, ...) built from the query as the object.
// Subresources without ConnectOptions are not admitted.
func (h *Handler) admitConnect(r *http.Request, res *Resource, sub Subresource, name string) error {
	if sub.ConnectOptions == nil || h.cfg.Admission == nil || !h.cfg.Admission.Handles(admission.Connect) {
		return nil
	}
	query := r.URL.Query()
	if sub.ConnectPath {
		query.Set("path", connectSubpath(r))
	}
	opts, err := sub.ConnectOptions(query)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	a := h.admissionAttrs(r, res, sub.Kind, name, opts, nil, admission.Connect, nil, false)
	if err := h.admit(r.Context(), a); err != nil {
		return err
	}
	if v, ok := h.cfg.Admission.(admission.ValidationInterface); ok && v.Handles(admission.Connect) {
		return v.Validate(r.Context(), a, h.admissionObjects(a))
	}
	return nil
}

// connectSubpath is the path after NAME/SUBRESOURCE ("" for none), with
// a leading slash and the request's trailing slash, as upstream's
// getRequestOptions makes it.
func connectSubpath(r *http.Request) string {
	info, ok := genericapirequest.RequestInfoFrom(r.Context())
	if !ok || len(info.Parts) <= 3 {
		if ok && len(info.Parts) == 3 && strings.HasSuffix(info.Path, "/") {
			return "/"
		}
		return ""
	}
	p := "/" + strings.Join(info.Parts[3:], "/")
	if strings.HasSuffix(info.Path, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// validateCreate is the store's create validation: the validating phase of
// the admission chain, which the store runs after the strategy's validation.
func (h *Handler) validateCreate(a admission.Attributes) rest.ValidateObjectFunc {
	if h.cfg.Admission == nil {
		return rest.ValidateAllObjectFunc
	}
	return rest.AdmissionToValidateObjectFunc(h.cfg.Admission, a, h.admissionObjects(a))
}

// validateUpdate is the store's update validation (validating phase).
func (h *Handler) validateUpdate(a admission.Attributes) rest.ValidateObjectUpdateFunc {
	if h.cfg.Admission == nil {
		return rest.ValidateAllObjectUpdateFunc
	}
	return rest.AdmissionToValidateObjectUpdateFunc(h.cfg.Admission, a, h.admissionObjects(a))
}

// validateDelete is the store's delete validation (validating phase, with
// the object being deleted).
func (h *Handler) validateDelete(a admission.Attributes) rest.ValidateObjectFunc {
	if h.cfg.Admission == nil {
		return rest.ValidateAllObjectFunc
	}
	return rest.AdmissionToValidateObjectDeleteFunc(h.cfg.Admission, a, h.admissionObjects(a))
}

// admitTransform is the update transformer running the mutating phase on
// the new object: as a Create when nothing is stored yet (create on
// update), else as an Update with the stored object as the old one.
func (h *Handler) admitTransform(r *http.Request, res *Resource, kind schema.GroupVersionKind, name string, updateOpts runtime.Object, createOpts runtime.Object, dryRun bool) rest.TransformFunc {
	return func(ctx context.Context, newObj, oldObj runtime.Object) (runtime.Object, error) {
		if h.cfg.Admission == nil {
			return newObj, nil
		}
		if !storedObject(oldObj) {
			return newObj, h.admit(ctx, h.admissionAttrs(r, res, kind, name, newObj, nil, admission.Create, createOpts, dryRun))
		}
		return newObj, h.admit(ctx, h.admissionAttrs(r, res, kind, name, newObj, unwrapCacheable(oldObj), admission.Update, updateOpts, dryRun))
	}
}

// admittedInfo runs transform on what the wrapped UpdatedObjectInfo makes.
type admittedInfo struct {
	rest.UpdatedObjectInfo
	transform rest.TransformFunc
}

// UpdatedObject implements rest.UpdatedObjectInfo.
func (i admittedInfo) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	obj, err := i.UpdatedObjectInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, err
	}
	return i.transform(ctx, obj, old)
}

// storedObject reports whether obj came from storage (has a UID), not the
// empty object a store hands to updates that may create.
func storedObject(obj runtime.Object) bool {
	m, err := meta.Accessor(unwrapCacheable(obj))
	return err == nil && m.GetUID() != ""
}

// nameOf is obj's name ("" when it has none yet, as with generateName).
func nameOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}
