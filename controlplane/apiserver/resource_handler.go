package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
)

// serveResource dispatches a resource request to its verb.
func (h *Handler) serveResource(w http.ResponseWriter, r *http.Request, info *genericapirequest.RequestInfo) {
	res, err := h.lookup(info)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	if res.Namespaced {
		ctx = genericapirequest.WithNamespace(ctx, info.Namespace)
	} else {
		ctx = genericapirequest.WithNamespace(ctx, "")
	}
	if res.Custom != nil {
		for _, w := range res.Custom.Warnings {
			warning.AddWarning(ctx, "", w)
		}
	}
	if sub, ok := res.Subresources[info.Subresource]; info.Subresource == "" || (ok && sub.Kind == res.GroupVersionKind()) {
		// Custom objects' own machinery, for the resource and the
		// subresources exchanging its kind (status); scale speaks autoscaling/v1.
		ctx = withCustom(ctx, res.Custom)
	}
	r = r.WithContext(ctx)
	if res.Verbs != nil && (info.Subresource != "" || !slices.Contains(res.Verbs, info.Verb)) {
		h.writeError(w, r, apierrors.NewMethodNotSupported(res.GroupVersionResource().GroupResource(), info.Verb))
		return
	}
	if !res.printable() {
		// As upstream for storage without a table convertor (the reviews):
		// a client accepting only a Table gets 406.
		if _, _, err := negotiation.NegotiateOutputMediaType(r, h.codecs, noTables{}); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	if info.Subresource != "" {
		h.serveSubresource(w, r, info, res)
		return
	}
	switch info.Verb {
	case "get":
		h.serveGet(w, r, res, res.Store, res.GroupVersionKind(), info.Name)
	case "list":
		h.serveList(w, r, res)
	case "watch":
		h.serveWatch(w, r, res)
	case "create":
		if res.Namespaced && info.Namespace == "" {
			h.writeError(w, r, apierrors.NewMethodNotSupported(res.GroupVersionResource().GroupResource(), "create without a namespace"))
			return
		}
		h.serveCreate(w, r, res)
	case "update":
		h.serveUpdate(w, r, res, res.Store, res.GroupVersionKind(), info.Name)
	case "patch":
		h.servePatch(w, r, res, res.Store, res.GroupVersionKind(), info.Name)
	case "delete":
		h.serveDelete(w, r, res, info.Name)
	case "deletecollection":
		h.serveDeleteCollection(w, r, res)
	default:
		h.writeError(w, r, apierrors.NewMethodNotSupported(res.GroupVersionResource().GroupResource(), info.Verb))
	}
}

// serveSubresource handles /status, /scale, /binding, /eviction and the
// connect subresources.
func (h *Handler) serveSubresource(w http.ResponseWriter, r *http.Request, info *genericapirequest.RequestInfo, res *Resource) {
	sub, ok := res.Subresources[info.Subresource]
	gr := schema.GroupResource{Group: res.GroupVersion.Group, Resource: res.Resource + "/" + info.Subresource}
	if !ok || info.Name == "" {
		h.writeError(w, r, apierrors.NewNotFound(gr, info.Name))
		return
	}
	if sub.Connect != nil {
		if err := h.admitConnect(r, res, sub, info.Name); err != nil {
			h.writeError(w, r, err)
			return
		}
		if err := sub.Connect(r.Context(), w, r, info.Namespace, info.Name); err != nil {
			h.writeError(w, r, err)
		}
		return
	}
	switch info.Verb {
	case "get":
		if g, ok := sub.Storage.(rest.Getter); ok {
			h.serveGet(w, r, res, g, sub.Kind, info.Name)
			return
		}
	case "update":
		if u, ok := sub.Storage.(rest.Updater); ok {
			h.serveUpdate(w, r, res, u, sub.Kind, info.Name)
			return
		}
	case "patch":
		if u, ok := sub.Storage.(storageGetUpdater); ok {
			h.servePatch(w, r, res, u, sub.Kind, info.Name)
			return
		}
	case "create":
		if c, ok := sub.Storage.(rest.NamedCreater); ok {
			h.serveNamedCreate(w, r, res, c, sub.Kind, info.Name)
			return
		}
	}
	h.writeError(w, r, apierrors.NewMethodNotSupported(gr, info.Verb))
}

// storageGetUpdater is what PUT and PATCH need.
type storageGetUpdater interface {
	rest.Getter
	rest.Updater
}

// decodeParams decodes query parameters into a metav1 options object.
func decodeParams(q url.Values, into runtime.Object) error {
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// checkDryRun accepts no dryRun or exactly "All".
func checkDryRun(dryRun []string) error {
	if len(dryRun) == 0 || (len(dryRun) == 1 && dryRun[0] == metav1.DryRunAll) {
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("dryRun: Unsupported value: %q: supported values: \"All\"", dryRun))
}

// listOptions decodes list/watch parameters, checking the field selector's
// labels against the kind's selectable fields.
func (h *Handler) listOptions(r *http.Request, res *Resource) (*metainternalversion.ListOptions, error) {
	opts := &metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if opts.FieldSelector != nil {
		gvk := res.GroupVersionKind()
		sel, err := opts.FieldSelector.Transform(func(label, value string) (string, string, error) {
			if res.Custom != nil {
				return res.Custom.ConvertFieldLabel(label, value)
			}
			return h.cfg.Scheme.ConvertFieldLabel(gvk, label, value)
		})
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.FieldSelector = sel
	}
	if errs := metainternalversionvalidation.ValidateListOptions(opts, true); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return opts, nil
}

// subresourceOf is the request's subresource ("" for the resource itself).
func subresourceOf(r *http.Request) string {
	if info, ok := genericapirequest.RequestInfoFrom(r.Context()); ok {
		return info.Subresource
	}
	return ""
}
