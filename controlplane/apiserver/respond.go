package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// metaV1 is the group version of Table and PartialObjectMetadata.
var metaV1 = metav1.SchemeGroupVersion

// coreV1 is where unversioned types (Status, APIVersions, ...) are encoded.
var coreV1 = schema.GroupVersion{Version: "v1"}

// restrictions allows the transformations we implement: Table (JSON and
// YAML) and PartialObjectMetadata[List] (any serializer).
type restrictions struct{}

func (restrictions) AllowsMediaTypeTransform(mimeType, mimeSubType string, target *schema.GroupVersionKind) bool {
	if target == nil {
		return true
	}
	if target.Group != metaV1.Group || (target.Version != "v1" && target.Version != "") {
		return false
	}
	switch target.Kind {
	case "Table":
		return mimeSubType == "json" || mimeSubType == "yaml"
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		return true
	}
	return false
}
func (restrictions) AllowsServerVersion(string) bool { return false }

// noTables are the restrictions of a resource without tables (one that is
// not stored: reviews): no Table.
type noTables struct{ restrictions }

func (n noTables) AllowsMediaTypeTransform(mimeType, mimeSubType string, target *schema.GroupVersionKind) bool {
	return (target == nil || target.Kind != "Table") && n.restrictions.AllowsMediaTypeTransform(mimeType, mimeSubType, target)
}
func (restrictions) AllowsStreamSchema(s string) bool { return s == "watch" }

// writeObject encodes obj in gv with the negotiated serializer.
func (h *Handler) writeObject(w http.ResponseWriter, r *http.Request, code int, gv schema.GroupVersion, obj runtime.Object) {
	mt, info, err := negotiation.NegotiateOutputMediaType(r, h.serializer(r.Context()), restrictions{})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// A write's result as=PartialObjectMetadata (the metadata client's
	// patch and delete); Status objects and lists go as they are.
	if mt.Convert != nil && mt.Convert.Kind == "PartialObjectMetadata" {
		if _, isMeta := unwrapCacheable(obj).(metav1.ObjectMetaAccessor); isMeta {
			m, err := partialMetadata(obj)
			if err != nil {
				h.writeError(w, r, err)
				return
			}
			h.encode(w, r, code, info, metaV1, m)
			return
		}
	}
	h.encode(w, r, code, info, gv, obj)
}

func (h *Handler) encode(w http.ResponseWriter, r *http.Request, code int, info runtime.SerializerInfo, gv schema.GroupVersion, obj runtime.Object) {
	enc := h.codecs.EncoderForVersion(info.Serializer, gv)
	if _, ok := obj.(runtime.Unstructured); ok {
		if c := customFrom(r.Context()); c != nil {
			// Custom objects (and their lists) go through their own
			// serializer, which converts them to gv.
			enc = c.Serializer.EncoderForVersion(info.Serializer, gv)
		}
	}
	w.Header().Set("Content-Type", info.MediaType)
	w.WriteHeader(code)
	if err := enc.Encode(obj, w); err != nil {
		h.log.Warn("encoding response", "type", fmt.Sprintf("%T", obj), "err", err)
	}
}

// writeError writes err as a Status object with its HTTP code.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := errorToStatus(err)
	if status.Code >= 500 {
		h.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	code := int(status.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	_, info, nerr := negotiation.NegotiateOutputMediaType(r, h.codecs, negotiation.DefaultEndpointRestrictions)
	if nerr != nil {
		// The client accepts nothing we produce: answer in JSON anyway.
		info, _ = runtime.SerializerInfoForMediaType(h.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="berth"`)
	}
	h.encode(w, r, code, info, coreV1, status)
}

// errorToStatus is apierrors' Status for API errors; anything else is a 500.
func errorToStatus(err error) *metav1.Status {
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		s := apiStatus.Status()
		if s.Status == "" {
			s.Status = metav1.StatusFailure
		}
		if s.Code == 0 {
			switch s.Reason {
			case metav1.StatusReasonNotAcceptable:
				s.Code = http.StatusNotAcceptable
			case metav1.StatusReasonUnsupportedMediaType:
				s.Code = http.StatusUnsupportedMediaType
			default:
				s.Code = http.StatusInternalServerError
			}
		}
		return &s
	}
	s := apierrors.NewInternalError(err).Status()
	return &s
}

// readBody reads at most the configured request size.
func (h *Handler) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, h.cfg.MaxRequestBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if int64(len(data)) > h.cfg.MaxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", h.cfg.MaxRequestBodyBytes))
	}
	return data, nil
}
