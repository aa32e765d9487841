package apiserver

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/registry/rest"
)

// serveGet answers GET on one object (or a subresource of it).
func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request, res *Resource, g rest.Getter, kind schema.GroupVersionKind, name string) {
	opts := &metav1.GetOptions{}
	if err := decodeParams(r.URL.Query(), opts); err != nil {
		h.writeError(w, r, err)
		return
	}
	obj, err := g.Get(r.Context(), name, opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	mt, info, err := negotiation.NegotiateOutputMediaType(r, h.serializer(r.Context()), restrictions{})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if mt.Convert != nil && kind == res.GroupVersionKind() {
		out, err := h.transform(r, res, mt.Convert, obj, false)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		h.encode(w, r, http.StatusOK, info, metaV1, out)
		return
	}
	h.encode(w, r, http.StatusOK, info, kind.GroupVersion(), obj)
}
