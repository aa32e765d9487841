package apiserver

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/warning"
)

// fieldValidation reads and checks the fieldValidation parameter
// (Strict, Warn (the default) or Ignore).
func fieldValidation(r *http.Request) (string, error) {
	v := r.URL.Query().Get("fieldValidation")
	switch v {
	case "":
		return metav1.FieldValidationWarn, nil
	case metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore:
		return v, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %q (want Strict, Warn or Ignore)", v))
}

// decodeBody decodes a request body of want's kind with the request's
// Content-Type, applies defaults, and handles unknown and duplicate fields
// as fieldValidation asks.
func (h *Handler) decodeBody(r *http.Request, body []byte, want schema.GroupVersionKind, validation string) (runtime.Object, error) {
	if len(body) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	info, err := negotiation.NegotiateInputSerializer(r, false, h.serializer(r.Context()))
	if err != nil {
		return nil, err
	}
	return h.decodeWith(r.Context(), info, body, want, validation)
}

func (h *Handler) decodeWith(ctx context.Context, info runtime.SerializerInfo, body []byte, want schema.GroupVersionKind, validation string) (_ runtime.Object, err error) {
	s := info.Serializer
	if validation != metav1.FieldValidationIgnore && info.StrictSerializer != nil {
		s = info.StrictSerializer
	}
	dec := h.serializer(ctx).DecoderToVersion(s, want.GroupVersion())
	var into runtime.Object
	if c := customFrom(ctx); c != nil {
		// Unstructured objects decode into a new object of the wanted
		// kind, as upstream's handlers do (no conversion on the way in).
		if into, err = c.Creater.New(want); err != nil {
			return nil, err
		}
	}
	obj, got, err := dec.Decode(body, &want, into)
	if err != nil {
		if strict, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
			if validation == metav1.FieldValidationStrict {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", want.Kind, want.Version, want.Kind, err))
			}
			for _, e := range strict.Errors() {
				warning.AddWarning(ctx, "", e.Error())
			}
		} else {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", want.Kind, want.Version, want.Kind, err))
		}
	}
	if got != nil && (got.Kind != want.Kind || got.GroupVersion() != want.GroupVersion()) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the body is a %s", got.Kind, got.Version, want.Kind, got))
	}
	gvks, _, err := h.typer(ctx).ObjectKinds(obj)
	if err != nil || gvks[0] != want {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request is a %T, not a %s", obj, want.Kind))
	}
	return obj, nil
}
