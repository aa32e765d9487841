package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
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
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	default:
		h.writeError(w, r, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch",
			schema.GroupResource{Group: res.GroupVersion.Group, Resource: res.Resource}, name,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType), 0, false))
		return
	}
	opts := &metav1.PatchOptions{}
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
	patch, err := h.readBody(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if len(bytes.TrimSpace(patch)) == 0 {
		h.writeError(w, r, apierrors.NewBadRequest("the patch is empty"))
		return
	}
	if pt != types.JSONPatchType {
		// Merge patches may come as YAML from some clients; JSON is YAML.
		if patch, err = yaml.YAMLToJSON(patch); err != nil {
			h.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the patch is not valid JSON: %v", err)))
			return
		}
	}
	info := &patchInfo{h: h, kind: kind, patchType: pt, patch: patch, validation: validation}
	uopts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	out, _, err := u.Update(r.Context(), name, info, rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, uopts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.writeObject(w, r, http.StatusOK, kind.GroupVersion(), out)
}

// patchInfo is a rest.UpdatedObjectInfo applying a patch to the current object.
type patchInfo struct {
	h          *Handler
	kind       schema.GroupVersionKind
	patchType  types.PatchType
	patch      []byte
	validation string
}

// Preconditions implements rest.UpdatedObjectInfo.
func (p *patchInfo) Preconditions() *metav1.Preconditions { return nil }

// UpdatedObject implements rest.UpdatedObjectInfo.
func (p *patchInfo) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	jsonInfo, ok := runtime.SerializerInfoForMediaType(p.h.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("no JSON serializer")
	}
	var orig bytes.Buffer
	if err := p.h.codecs.EncoderForVersion(jsonInfo.Serializer, p.kind.GroupVersion()).Encode(unwrapCacheable(old), &orig); err != nil {
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
	return p.h.decodeWith(ctx, jsonInfo, patched, p.kind, p.validation)
}
