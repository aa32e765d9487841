// Package openapi builds and serves the OpenAPI documents of berth's
// apiserver: /openapi/v2 (Swagger 2.0, JSON or gnostic protobuf) and
// /openapi/v3 (an index of group-versions with content hashes, then one
// OpenAPI 3.0 document per group-version).
//
// Upstream generates its definitions from the Go types with a code
// generator that lives in k8s.io/kubernetes. berth builds the same documents
// once, at start-up, by reflection over the k8s.io/api Go types:
//
//   - definition names come from each type's OpenAPIModelName method
//     (k8s.io/api and k8s.io/apimachinery ship them), falling back to the
//     reversed-domain package path ("io.k8s.api.core.v1.Pod");
//   - property names and types come from the struct fields and their json
//     tags, inlined structs flattened as encoding/json does; a field is
//     required by upstream's rule (+required, else not +optional, else no
//     omitempty) — the markers are comments, so markers.go lists the fields
//     where they overrule the tag, and a test checks that table against the
//     k8s.io sources;
//   - descriptions come from the SwaggerDoc methods generated into
//     k8s.io/api and k8s.io/apimachinery;
//   - types with an OpenAPISchemaType method (Time, MicroTime, Quantity,
//     IntOrString, Duration) become named definitions of that type and
//     format, and in OpenAPI v3 a oneOf where the type declares
//     OpenAPIV3OneOfTypes, as upstream publishes them;
//   - x-kubernetes-patch-strategy and x-kubernetes-patch-merge-key come from
//     the patchStrategy and patchMergeKey struct tags;
//   - x-kubernetes-list-type, x-kubernetes-list-map-keys and
//     x-kubernetes-map-type are comment markers upstream (+listType, …), not
//     struct tags, so they are read from the structured-merge-diff schema
//     that client-go's applyconfigurations package ships (generated from
//     upstream's own OpenAPI). A list that upstream left unannotated is
//     published as atomic, which is how server-side apply treats it.
//
// Usage, once at start-up:
//
//	docs, err := openapi.New(openapi.DefaultResources(), openapi.Info{Version: "v1.37.2"})
//	mux.Handle("/openapi/", docs.Handler()) // /openapi/v2, /openapi/v3, /openapi/v3/<gv>
//
// Paths follow upstream's layout and operation extensions
// (x-kubernetes-action, x-kubernetes-group-version-kind), with the
// parameters inline on each operation, which is where kubectl looks for
// fieldValidation when it decides whether the server validates fields.
package openapi
