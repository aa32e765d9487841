package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/kube-openapi/pkg/openapiconv"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Documents holds both OpenAPI documents, built once by New and immutable
// afterwards; its handlers are safe for concurrent use.
type Documents struct {
	v2 *spec.Swagger
	// v2JSON is the encoded Swagger document; its protobuf and gzip
	// variants are made on first request.
	v2JSON  *representation
	v2Proto *lazyRepresentation
	v2ETag  string

	// v3 maps "api/v1", "apis/apps/v1", … to the group-version's document.
	v3      map[string]*v3Document
	v3Index *representation
	v3ETag  string
}

// v3Document is one group-version's OpenAPI v3 document.
type v3Document struct {
	json  *representation
	proto *lazyRepresentation
	// hash is the uppercase hex SHA-512 of json, as upstream computes it;
	// it is the ETag and the ?hash= of the index's serverRelativeURL.
	hash string
}

// v3IndexEntry is one group-version of the /openapi/v3 index.
type v3IndexEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

// New builds the OpenAPI v2 and v3 documents of resources. It fails, with an
// error wrapping errdefs.ErrInvalidArgument that names the resource and
// field, on an invalid list or a Go type it cannot describe.
func New(resources []Resource, info Info) (*Documents, error) {
	b, err := build(resources, info)
	if err != nil {
		return nil, err
	}
	return encode(b.swagger, b.oneOf)
}

// built is the Swagger 2.0 document and what was learnt making it.
type built struct {
	swagger *spec.Swagger
	// oneOf holds the OpenAPI v3 alternatives of scalar definitions.
	oneOf map[string][]string
	// types maps each definition to its Go type.
	types map[string]reflect.Type
}

// build makes the Swagger 2.0 document of resources.
func build(resources []Resource, info Info) (*built, error) {
	if err := validateResources(resources); err != nil {
		return nil, err
	}
	if info.Title == "" {
		info.Title = "Kubernetes"
	}
	smd, err := mergeSchema()
	if err != nil {
		return nil, err
	}
	defs := newDefinitions(smd)
	p := &paths{info: info, defs: defs, items: map[string]spec.PathItem{}, gvks: map[string][]schema.GroupVersionKind{}}
	for _, r := range resources {
		if err := p.add(r); err != nil {
			return nil, fmt.Errorf("openapi: resource %s %s: %w", r.GVK.GroupVersion(), r.Resource, err)
		}
	}
	for name, gvks := range p.gvks {
		def := defs.defs[name]
		list := make([]map[string]string, 0, len(gvks))
		for _, gvk := range gvks {
			list = append(list, map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
		}
		def.AddExtension(extGVK, list)
		defs.defs[name] = def
	}
	swagger := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: info.Title, Version: info.Version}},
		Paths:       &spec.Paths{Paths: p.items},
		Definitions: defs.defs,
		SecurityDefinitions: spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: spec.SecuritySchemeProps{
			Type: "apiKey", Name: "authorization", In: "header", Description: bearerDescription,
		}}},
		Security: []map[string][]string{{"BearerToken": {}}},
	}}
	return &built{swagger: swagger, oneOf: defs.oneOf, types: defs.types}, nil
}

const bearerDescription = "Bearer token authentication: the header value is 'Bearer <token>'."

// encode derives the per-group-version OpenAPI v3 documents from the v2
// document and encodes everything served; oneOf holds the v3 alternatives
// of scalar definitions.
func encode(swagger *spec.Swagger, oneOf map[string][]string) (*Documents, error) {
	v2JSON, err := swagger.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding the v2 document: %w", err)
	}
	d := &Documents{v2: swagger, v2JSON: newRepresentation(v2JSON), v2ETag: etag(v2JSON), v3: map[string]*v3Document{},
		v2Proto: &lazyRepresentation{encode: func() ([]byte, error) { return v2Protobuf(v2JSON) }}}

	byGV := map[string][]string{}
	for path := range swagger.Paths.Paths {
		gv := pathGroupVersion(path)
		byGV[gv] = append(byGV[gv], path)
	}
	index := struct {
		Paths map[string]v3IndexEntry `json:"paths"`
	}{Paths: map[string]v3IndexEntry{}}
	for gv, gvPaths := range byGV {
		doc := buildV3(swagger, gvPaths, oneOf)
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("openapi: encoding the v3 document of %s: %w", gv, err)
		}
		v := &v3Document{json: newRepresentation(data), hash: etag(data),
			proto: &lazyRepresentation{encode: func() ([]byte, error) { return v3Protobuf(data) }}}
		d.v3[gv] = v
		index.Paths[gv] = v3IndexEntry{ServerRelativeURL: v3URL(gv, v.hash)}
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding the v3 index: %w", err)
	}
	d.v3Index, d.v3ETag = newRepresentation(indexJSON), etag(indexJSON)
	return d, nil
}

// mergeSchema returns the structured-merge-diff schema client-go ships for
// the k8s.io/api types (the source of list and map topology).
func mergeSchema() (*smdschema.Schema, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("openapi: registering core/v1: %w", err)
	}
	tv, err := applyconfigurations.NewTypeConverter(scheme).ObjectToTyped(&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("openapi: loading the structured-merge-diff schema: %w", err)
	}
	return tv.Schema(), nil
}

// pathGroupVersion is the v3 key of a path: "api/v1" for "/api/v1/pods",
// "apis/apps/v1" for "/apis/apps/v1/deployments".
func pathGroupVersion(path string) string {
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 4)
	if parts[0] == "apis" && len(parts) >= 3 {
		return strings.Join(parts[:3], "/")
	}
	return strings.Join(parts[:min(2, len(parts))], "/")
}

// etag is upstream's content hash: uppercase hex SHA-512.
func etag(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

// v3URL is the serverRelativeURL of a group-version's document.
func v3URL(gv, hash string) string {
	return "/openapi/v3/" + gv + "?" + url.Values{"hash": {hash}}.Encode()
}

// buildV3 makes the OpenAPI v3 document of one group-version: its paths and
// every definition they reach.
func buildV3(swagger *spec.Swagger, gvPaths []string, oneOf map[string][]string) *spec3.OpenAPI {
	v2Paths := &spec.Paths{Paths: map[string]spec.PathItem{}}
	for _, path := range gvPaths {
		v2Paths.Paths[path] = swagger.Paths.Paths[path]
	}
	reached := map[string]bool{}
	var visit func(s *spec.Schema)
	visit = func(s *spec.Schema) {
		if s == nil {
			return
		}
		if ref := s.Ref.String(); ref != "" {
			name := strings.TrimPrefix(ref, definitionsPrefix)
			if !reached[name] {
				reached[name] = true
				def := swagger.Definitions[name]
				visit(&def)
			}
		}
		for _, prop := range s.Properties {
			visit(&prop)
		}
		if s.Items != nil {
			visit(s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			visit(s.AdditionalProperties.Schema)
		}
		for i := range s.AllOf {
			visit(&s.AllOf[i])
		}
	}
	for _, item := range v2Paths.Paths {
		for _, op := range []*spec.Operation{item.Get, item.Put, item.Post, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			for _, param := range op.Parameters {
				visit(param.Schema)
			}
			for _, resp := range op.Responses.StatusCodeResponses {
				visit(resp.Schema)
			}
		}
	}
	schemas := make(map[string]*spec.Schema, len(reached))
	for name := range reached {
		def := swagger.Definitions[name]
		v3 := openapiconv.ConvertSchema(&def)
		if types, ok := oneOf[name]; ok {
			// As upstream publishes these in v3: the alternatives instead of
			// the single v2 type.
			clone := *v3
			clone.Type = nil
			clone.OneOf = nil
			for _, t := range types {
				clone.OneOf = append(clone.OneOf, spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{t}}})
			}
			v3 = &clone
		}
		schemas[name] = v3
	}
	return &spec3.OpenAPI{
		Version: "3.0.0",
		Info:    swagger.Info,
		Paths:   openapiconv.ConvertPaths(v2Paths),
		Components: &spec3.Components{
			Schemas: schemas,
			SecuritySchemes: spec3.SecuritySchemes{"BearerToken": &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{
				Type: "apiKey", Name: "authorization", In: "header", Description: bearerDescription,
			}}},
		},
		SecurityRequirement: swagger.Security,
	}
}

// Swagger returns the OpenAPI v2 document. Callers must not modify it.
func (d *Documents) Swagger() *spec.Swagger { return d.v2 }

// Sizes reports the encoded JSON sizes in bytes: the v2 document, and all
// v3 documents together.
func (d *Documents) Sizes() (v2, v3 int) {
	for _, v := range d.v3 {
		v3 += len(v.json.raw)
	}
	return len(d.v2JSON.raw), v3
}
