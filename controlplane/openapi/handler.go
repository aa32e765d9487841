package openapi

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
)

// The served paths.
const (
	PathV2       = "/openapi/v2"
	PathV3       = "/openapi/v3"
	pathV3Prefix = PathV3 + "/"
)

// The media types of the documents, as upstream and client-go name them.
const (
	mimeV2Protobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mimeV2ProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mimeV3Protobuf           = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	mimeV3ProtobufDeprecated = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

var (
	v2Offers = []mediaOffer{
		{accept: mimeJSON, contentType: mimeJSON},
		{accept: mimeV2ProtobufDeprecated, contentType: mimeV2Protobuf},
		{accept: mimeV2Protobuf, contentType: mimeV2Protobuf},
	}
	v3Offers = []mediaOffer{
		{accept: mimeJSON, contentType: mimeJSON},
		{accept: mimeV3Protobuf, contentType: mimeV3Protobuf},
		{accept: mimeV3ProtobufDeprecated, contentType: mimeV3Protobuf},
	}
)

// Handler serves PathV2, PathV3 and PathV3/<group-version>, and 404 for any
// other path. Mount it once at "/openapi/", or at each path.
func (d *Documents) Handler() http.Handler {
	v2, v3 := d.V2Handler(), d.V3Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == PathV2:
			v2.ServeHTTP(w, r)
		case r.URL.Path == PathV3 || strings.HasPrefix(r.URL.Path, pathV3Prefix):
			v3.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// V2Handler serves the Swagger 2.0 document at any path it is mounted on:
// JSON, or gnostic protobuf for the Accept types client-go sends, with an
// ETag (the same for both, with Vary: Accept, as upstream), gzip when asked,
// and 406 when the Accept header allows neither.
func (d *Documents) V2Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowRead(w, r) {
			return
		}
		w.Header().Add("Vary", "Accept")
		offer, ok := negotiate(r.Header.Get("Accept"), v2Offers)
		if !ok {
			http.Error(w, "openapi/v2 is served as "+mimeJSON+" or "+mimeV2Protobuf, http.StatusNotAcceptable)
			return
		}
		rep := d.v2JSON
		if offer.contentType != mimeJSON {
			var err error
			if rep, err = d.v2Proto.get(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		serve(w, r, offer.contentType, d.v2ETag, rep)
	})
}

// V3Handler serves the OpenAPI v3 index at PathV3 and each group-version's
// document at PathV3/<group-version> ("/openapi/v3/api/v1",
// "/openapi/v3/apis/apps/v1"), as JSON or gnostic protobuf. A request
// carrying the current ?hash= is answered with immutable caching headers; a
// stale hash is redirected (301) to the current URL, as upstream does.
func (d *Documents) V3Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowRead(w, r) {
			return
		}
		if r.URL.Path == PathV3 {
			serve(w, r, mimeJSON, d.v3ETag, d.v3Index)
			return
		}
		gv := strings.TrimPrefix(r.URL.Path, pathV3Prefix)
		v, ok := d.v3[gv]
		if !ok {
			http.Error(w, fmt.Sprintf("no OpenAPI v3 document for group-version %q", gv), http.StatusNotFound)
			return
		}
		w.Header().Add("Vary", "Accept")
		offer, ok := negotiate(r.Header.Get("Accept"), v3Offers)
		if !ok {
			http.Error(w, "openapi/v3 documents are served as "+mimeJSON+" or "+mimeV3Protobuf, http.StatusNotAcceptable)
			return
		}
		if hash := r.URL.Query().Get("hash"); hash != "" {
			if hash != v.hash {
				http.Redirect(w, r, v3URL(gv, v.hash), http.StatusMovedPermanently)
				return
			}
			w.Header().Set("Cache-Control", "public, immutable")
			w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
		}
		rep := v.json
		if offer.contentType != mimeJSON {
			var err error
			if rep, err = v.proto.get(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		serve(w, r, offer.contentType, v.hash, rep)
	})
}

// allowRead answers anything but GET and HEAD with 405.
func allowRead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
	return false
}

// v2Protobuf converts the JSON Swagger document to gnostic's protobuf.
func v2Protobuf(data []byte) ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("openapi: converting the v2 document to protobuf: %w", err)
	}
	return marshalProto(doc)
}

// v3Protobuf converts a JSON OpenAPI v3 document to gnostic's protobuf.
func v3Protobuf(data []byte) ([]byte, error) {
	doc, err := openapi_v3.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("openapi: converting a v3 document to protobuf: %w", err)
	}
	return marshalProto(doc)
}

func marshalProto(m proto.Message) ([]byte, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding protobuf: %w", err)
	}
	return b, nil
}
