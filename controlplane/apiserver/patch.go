package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/admission"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/yaml"
)

// servePatch answers PATCH on an object or a subresource. The patch is
// applied to the current object inside the storage's update, so it is
// retried on conflicts unless the patch itself pins a resourceVersion.
func (h *Handler) servePatch(w http.ResponseWriter, r *http.Request, res *Resource, u storageGetUpdater, kind schema.GroupVersionKind, name string) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		ct = ""
	}
	pt := types.PatchType(ct)
	fm := h.fieldManager(res, subresourceOf(r), kind)
	// Custom resources have no Go types to say how lists merge: no
	// strategic merge patches, as upstream.
	strategic := res.Custom == nil
	switch {
	case pt == types.JSONPatchType, pt == types.MergePatchType, pt == types.StrategicMergePatchType && strategic:
	case pt == types.ApplyYAMLPatchType && fm != nil:
	default:
		h.writeError(w, r, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch",
			schema.GroupResource{Group: res.GroupVersion.Group, Resource: res.Resource}, name,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(patchTypes(strategic, fm != nil), ", ")), 0, false))
		return
	}
	opts := &metav1.PatchOptions{}
	patch, validation, err := h.readWrite(r, opts, &opts.DryRun)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if len(bytes.TrimSpace(patch)) == 0 {
		h.writeError(w, r, apierrors.NewBadRequest("the patch is empty"))
		return
	}
	if pt == types.ApplyYAMLPatchType && opts.FieldManager == "" {
		h.writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "",
			field.ErrorList{field.Required(field.NewPath("fieldManager"), "is required for apply patch")}))
		return
	}
	if opts.Force != nil && pt != types.ApplyYAMLPatchType {
		h.writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "",
			field.ErrorList{field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch")}))
		return
	}
	if pt != types.JSONPatchType && pt != types.ApplyYAMLPatchType {
		// Merge patches may come as YAML from some clients; JSON is YAML.
		// (Apply configurations stay YAML: duplicate keys are reported
		// with their line.)
		if patch, err = yaml.YAMLToJSON(patch); err != nil {
			h.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the patch is not valid JSON: %v", err)))
			return
		}
	}
	info := &patchInfo{h: h, name: name, kind: kind, patchType: pt, patch: patch, validation: validation,
		fm: fm, manager: managerName(opts.FieldManager, r), force: opts.Force != nil && *opts.Force,
		resource: schema.GroupResource{Group: res.GroupVersion.Group, Resource: res.Resource}}
	uopts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	// Apply creates what does not exist yet, as upstream.
	dryRun := len(uopts.DryRun) > 0
	copts := updateToCreateOptions(uopts)
	createValidate := h.validateCreate(h.admissionAttrs(r, res, kind, name, nil, nil, admission.Create, copts, dryRun))
	updateValidate := h.validateUpdate(h.admissionAttrs(r, res, kind, name, nil, nil, admission.Update, opts, dryRun))
	admitted := admittedInfo{UpdatedObjectInfo: info, transform: h.admitTransform(r, res, kind, name, opts, copts, dryRun)}
	out, created, err := u.Update(r.Context(), name, admitted, createValidate, updateValidate, pt == types.ApplyYAMLPatchType, uopts)
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

// patchTypes are the accepted patch media types.
func patchTypes(strategic, apply bool) []string {
	pts := []string{string(types.JSONPatchType), string(types.MergePatchType)}
	if strategic {
		pts = append(pts, string(types.StrategicMergePatchType))
	}
	if apply {
		pts = append(pts, string(types.ApplyYAMLPatchType))
	}
	return pts
}

// patchInfo is a rest.UpdatedObjectInfo applying a patch to the current object.
type patchInfo struct {
	h          *Handler
	name       string
	resource   schema.GroupResource
	kind       schema.GroupVersionKind
	patchType  types.PatchType
	patch      []byte
	validation string
	// fm tracks managedFields and merges apply patches (nil: neither).
	fm      *managedfields.FieldManager
	manager string
	force   bool
}

// Preconditions implements rest.UpdatedObjectInfo.
func (p *patchInfo) Preconditions() *metav1.Preconditions { return nil }

// UpdatedObject implements rest.UpdatedObjectInfo.
func (p *patchInfo) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	if p.patchType == types.ApplyYAMLPatchType {
		if m, err := meta.Accessor(unwrapCacheable(old)); err == nil && m.GetUID() == "" {
			// Apply creates: from a new object of the kind, as upstream
			// (the store's empty object of an unstructured kind has no kind).
			fresh, err := p.h.creater(ctx).New(p.kind)
			if err != nil {
				return nil, err
			}
			old = fresh
		}
		return p.apply(ctx, old)
	}
	// The store hands a new, empty object when none is stored (it may
	// create on update, as events and leases do): only apply creates, the
	// other patches find nothing to patch, as upstream. (Patching the
	// empty object would create an object without name: event recorders
	// PATCH a series or count first and create only on NotFound.)
	if m, err := meta.Accessor(unwrapCacheable(old)); err != nil || m.GetUID() == "" {
		return nil, apierrors.NewNotFound(p.resource, p.name)
	}
	ser := p.h.serializer(ctx)
	jsonInfo, ok := runtime.SerializerInfoForMediaType(ser.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("no JSON serializer")
	}
	var orig bytes.Buffer
	if err := ser.EncoderForVersion(jsonInfo.Serializer, p.kind.GroupVersion()).Encode(unwrapCacheable(old), &orig); err != nil {
		return nil, err
	}
	var patched []byte
	var err error
	switch p.patchType {
	case types.JSONPatchType:
		var ops jsonpatch.Patch
		if ops, err = jsonpatch.DecodePatch(p.patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		patched, err = ops.Apply(orig.Bytes())
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(orig.Bytes(), p.patch)
	case types.StrategicMergePatchType:
		var schemaObj runtime.Object
		if schemaObj, err = p.h.cfg.Scheme.New(p.kind); err != nil {
			return nil, err
		}
		patched, err = strategicpatch.StrategicMergePatch(orig.Bytes(), p.patch, schemaObj)
	}
	if err != nil {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: p.kind.Group, Kind: p.kind.Kind}, "",
			field.ErrorList{field.Invalid(field.NewPath("patch"), string(p.patch), err.Error())})
	}
	obj, err := p.h.decodeWith(ctx, jsonInfo, patched, p.kind, p.validation)
	if err != nil || p.fm == nil {
		return obj, err
	}
	return p.fm.UpdateNoErrors(old, obj, p.manager), nil
}

// apply merges a server-side apply configuration into the live object.
func (p *patchInfo) apply(ctx context.Context, live runtime.Object) (runtime.Object, error) {
	cfg := &unstructured.Unstructured{Object: map[string]any{}}
	// Numbers decode as int64 where integral (as upstream), not float64.
	if err := utilyaml.Unmarshal(p.patch, &cfg.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if cfg.GetAPIVersion() != p.kind.GroupVersion().String() || cfg.GetKind() != p.kind.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the apply configuration is a %s %s, not a %s", cfg.GetAPIVersion(), cfg.GetKind(), p.kind))
	}
	if cfg.GetName() != p.name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", cfg.GetName(), p.name))
	}
	obj, err := p.fm.Apply(unwrapCacheable(live), cfg, p.manager, p.force)
	if err != nil {
		return nil, err
	}
	// Duplicate keys, as upstream: refused with Strict, a warning with Warn.
	if p.validation == metav1.FieldValidationStrict || p.validation == metav1.FieldValidationWarn {
		if err := utilyaml.UnmarshalStrict(p.patch, &map[string]any{}); err != nil {
			if p.validation == metav1.FieldValidationStrict {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
			}
			warning.AddWarning(ctx, "", err.Error())
		}
	}
	return obj, nil
}
