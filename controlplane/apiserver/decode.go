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
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
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

// readWrite reads a write request: its query parameters into opts (the
// dry-run modes, which decoding fills in at dryRun, checked), the field
// validation asked for, and the body.
func (h *Handler) readWrite(r *http.Request, opts runtime.Object, dryRun *[]string) (body []byte, validation string, err error) {
	if err := decodeParams(r.URL.Query(), opts); err != nil {
		return nil, "", err
	}
	if err := checkDryRun(*dryRun); err != nil {
		return nil, "", err
	}
	if validation, err = fieldValidation(r); err != nil {
		return nil, "", err
	}
	body, err = h.readBody(r)
	return body, validation, err
}

// decodeWrite is readWrite with the body decoded as kind.
func (h *Handler) decodeWrite(r *http.Request, opts runtime.Object, dryRun *[]string, kind schema.GroupVersionKind) (runtime.Object, error) {
	body, validation, err := h.readWrite(r, opts, dryRun)
	if err != nil {
		return nil, err
	}
	return h.decodeBody(r, body, kind, validation)
}

// defaultNamespace sets an object's empty namespace to the request's;
// another namespace than the request's is a bad request.
func defaultNamespace(ctx context.Context, m metav1.Object) error {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	switch m.GetNamespace() {
	case "":
		m.SetNamespace(ns)
	case ns:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}
