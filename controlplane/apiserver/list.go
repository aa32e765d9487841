package apiserver

import (
	"net/http"

	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// serveList answers GET on a collection.
func (h *Handler) serveList(w http.ResponseWriter, r *http.Request, res *Resource) {
	opts, err := h.listOptions(r, res)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if opts.Watch {
		h.serveWatch(w, r, res)
		return
	}
	mt, info, err := negotiation.NegotiateOutputMediaType(r, h.serializer(r.Context()), restrictions{})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	list, err := res.Store.List(r.Context(), opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if mt.Convert != nil {
		out, err := h.transform(r, res, mt.Convert, list, true)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		h.encode(w, r, http.StatusOK, info, metaV1, out)
		return
	}
	h.encode(w, r, http.StatusOK, info, res.GroupVersion, list)
}
