package apiserver

import (
	"k8s.io/apiserver/pkg/admission"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"sigs.k8s.io/yaml"
)

// coreDeleteOptions is the kind assumed for a DeleteOptions body without one.
var coreDeleteOptions = coreV1.WithKind("DeleteOptions")

// deleteOptions reads DeleteOptions from the body (if any) and the query.
func (h *Handler) deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := h.readBody(r)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		info, err := negotiation.NegotiateInputSerializer(r, false, h.codecs)
		if err != nil {
			return nil, err
		}
		// DeleteOptions is registered in every group version; any apiVersion will do.
		obj, _, err := info.Serializer.Decode(body, &coreDeleteOptions, opts)
		switch {
		case err == nil:
			if o, ok := obj.(*metav1.DeleteOptions); ok {
				opts = o
			}
		case info.MediaTypeSubType == "json" || info.MediaTypeSubType == "yaml":
			// An apiVersion the scheme does not register DeleteOptions in
			// (meta.k8s.io/v1): the fields are the same, read them plainly.
			opts = &metav1.DeleteOptions{}
			if yerr := yaml.Unmarshal(body, opts); yerr != nil {
				return nil, apierrors.NewBadRequest("DeleteOptions in the request body: " + err.Error())
			}
		default:
			return nil, apierrors.NewBadRequest("DeleteOptions in the request body: " + err.Error())
		}
	}
	q := r.URL.Query()
	if len(q) > 0 {
		fromQuery := &metav1.DeleteOptions{}
		if err := decodeParams(q, fromQuery); err != nil {
			return nil, err
		}
		if fromQuery.GracePeriodSeconds != nil {
			opts.GracePeriodSeconds = fromQuery.GracePeriodSeconds
		}
		if fromQuery.PropagationPolicy != nil {
			opts.PropagationPolicy = fromQuery.PropagationPolicy
		}
		if fromQuery.OrphanDependents != nil {
			opts.OrphanDependents = fromQuery.OrphanDependents
		}
		if len(fromQuery.DryRun) > 0 {
			opts.DryRun = fromQuery.DryRun
		}
	}
	if err := checkDryRun(opts.DryRun); err != nil {
		return nil, err
	}
	opts.TypeMeta = metav1.TypeMeta{}
	return opts, nil
}

// serveDelete answers DELETE on one object: 200 with the object when it is
// still there (graceful deletion, finalizers), else 200 with a Success Status.
func (h *Handler) serveDelete(w http.ResponseWriter, r *http.Request, res *Resource, name string) {
	opts, err := h.deleteOptions(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	attrs := h.admissionAttrs(r, res, res.GroupVersionKind(), name, nil, nil, admission.Delete, opts, len(opts.DryRun) > 0)
	if err := h.admit(r.Context(), attrs); err != nil {
		h.writeError(w, r, err)
		return
	}
	out, deleted, err := res.Store.Delete(r.Context(), name, h.validateDelete(attrs), opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	h.writeResult(w, r, code, res, out)
}

// serveDeleteCollection answers DELETE on a collection.
func (h *Handler) serveDeleteCollection(w http.ResponseWriter, r *http.Request, res *Resource) {
	opts, err := h.deleteOptions(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	listOpts, err := h.listOptions(r, res)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	attrs := h.admissionAttrs(r, res, res.GroupVersionKind(), "", nil, nil, admission.Delete, opts, len(opts.DryRun) > 0)
	if err := h.admit(r.Context(), attrs); err != nil {
		h.writeError(w, r, err)
		return
	}
	out, err := res.Store.DeleteCollection(r.Context(), h.validateDelete(attrs), opts, listOpts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.writeResult(w, r, http.StatusOK, res, out)
}

// writeResult writes an object of the resource, or a Status.
func (h *Handler) writeResult(w http.ResponseWriter, r *http.Request, code int, res *Resource, out runtime.Object) {
	if _, ok := out.(*metav1.Status); ok {
		h.writeObject(w, r, code, coreV1, out)
		return
	}
	h.writeObject(w, r, code, res.GroupVersion, out)
}
