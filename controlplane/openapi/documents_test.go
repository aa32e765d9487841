package openapi

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"berth/internal/errdefs"
)

// served fetches both documents through client-go, as kubectl does: the v2
// document as protobuf, the v3 documents through the index.
type served struct {
	v2     *openapi_v2.Document
	v2JSON map[string]any
	v3     map[schema.GroupVersion]*spec3.OpenAPI
}

func fetchServed(t *testing.T, docs *Documents) *served {
	t.Helper()
	srv := httptest.NewServer(docs.Handler())
	t.Cleanup(srv.Close)
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema (v2 protobuf): %v", err)
	}
	var v2JSON map[string]any
	if err := json.Unmarshal(docs.v2JSON.raw, &v2JSON); err != nil {
		t.Fatal(err)
	}
	root := openapi3.NewRoot(dc.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatalf("v3 GroupVersions: %v", err)
	}
	out := &served{v2: v2, v2JSON: v2JSON, v3: map[schema.GroupVersion]*spec3.OpenAPI{}}
	for _, gv := range gvs {
		doc, err := root.GVSpec(gv)
		if err != nil {
			t.Fatalf("v3 GVSpec(%s): %v", gv, err)
		}
		out.v3[gv] = doc
	}
	return out
}

// gvkExtension reads an x-kubernetes-group-version-kind list.
func gvkExtension(t *testing.T, ext spec.Extensions) []schema.GroupVersionKind {
	t.Helper()
	var list []map[string]string
	if _, ok := ext[extGVK]; !ok {
		return nil
	}
	if err := ext.GetObject(extGVK, &list); err != nil {
		t.Fatalf("%s: %v", extGVK, err)
	}
	var out []schema.GroupVersionKind
	for _, m := range list {
		out = append(out, schema.GroupVersionKind{Group: m["group"], Version: m["version"], Kind: m["kind"]})
	}
	return out
}

// schemaForKind finds the v3 component schema carrying gvk, as kubectl
// explain and apply do.
func schemaForKind(t *testing.T, doc *spec3.OpenAPI, gvk schema.GroupVersionKind) (string, *spec.Schema) {
	t.Helper()
	for name, s := range doc.Components.Schemas {
		if slices.Contains(gvkExtension(t, s.Extensions), gvk) {
			return name, s
		}
	}
	return "", nil
}

func TestPodSchema(t *testing.T) {
	s := fetchServed(t, newDefaultDocuments(t))
	doc := s.v3[schema.GroupVersion{Version: "v1"}]
	name, pod := schemaForKind(t, doc, corev1.SchemeGroupVersion.WithKind("Pod"))
	if name != "io.k8s.api.core.v1.Pod" {
		t.Fatalf("Pod's schema is %q, want io.k8s.api.core.v1.Pod", name)
	}
	refs := map[string]string{
		"metadata": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"spec":     "#/components/schemas/io.k8s.api.core.v1.PodSpec",
		"status":   "#/components/schemas/io.k8s.api.core.v1.PodStatus",
	}
	for field, want := range refs {
		prop := pod.Properties[field]
		if len(prop.AllOf) != 1 || prop.AllOf[0].Ref.String() != want {
			t.Errorf("v3 Pod.%s = %+v, want allOf [$ref %s]", field, prop, want)
		}
		if prop.Description == "" {
			t.Errorf("v3 Pod.%s has no description", field)
		}
	}
	for _, field := range []string{"apiVersion", "kind"} {
		if !pod.Properties[field].Type.Contains("string") {
			t.Errorf("Pod.%s is not a string", field)
		}
	}

	spec := doc.Components.Schemas["io.k8s.api.core.v1.PodSpec"]
	containers := spec.Properties["containers"]
	for ext, want := range map[string]any{extPatchStrategy: "merge", extPatchMergeKey: "name", extListType: "map"} {
		if got := containers.Extensions[ext]; got != want {
			t.Errorf("PodSpec.containers %s = %v, want %v", ext, got, want)
		}
	}
	if keys, _ := containers.Extensions[extListMapKeys].([]any); len(keys) != 1 || keys[0] != "name" {
		t.Errorf("PodSpec.containers %s = %v, want [name]", extListMapKeys, containers.Extensions[extListMapKeys])
	}
	if !slices.Contains(spec.Required, "containers") {
		t.Errorf("PodSpec.required = %v, want containers in it", spec.Required)
	}
	if got := containers.Items.Schema.Ref.String(); got != "#/components/schemas/io.k8s.api.core.v1.Container" {
		t.Errorf("containers items ref %q", got)
	}
	container := doc.Components.Schemas["io.k8s.api.core.v1.Container"]
	if !slices.Equal(container.Required, []string{"name"}) {
		t.Errorf("Container.required = %v, want [name]", container.Required)
	}
	if got := container.Properties["name"].Description; !strings.HasPrefix(got, "Name of the container specified as a DNS_LABEL.") {
		t.Errorf("Container.name description %q", got)
	}
	// Volumes inline VolumeSource: its fields and their own descriptions.
	volume := doc.Components.Schemas["io.k8s.api.core.v1.Volume"]
	if hp := volume.Properties["hostPath"]; len(hp.AllOf) != 1 || hp.Description == "" {
		t.Errorf("Volume.hostPath (inlined from VolumeSource) = %+v", hp)
	}
	if got := spec.Properties["volumes"].Extensions[extPatchStrategy]; got != "merge,retainKeys" {
		t.Errorf("PodSpec.volumes patch strategy %v, want merge,retainKeys", got)
	}
	// Atomic maps and structs.
	if got := spec.Properties["nodeSelector"].Extensions[extMapType]; got != "atomic" {
		t.Errorf("PodSpec.nodeSelector map type %v, want atomic", got)
	}
	if got := doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"].Extensions[extMapType]; got != "atomic" {
		t.Errorf("LabelSelector map type %v, want atomic", got)
	}
}

func TestScalarTypes(t *testing.T) {
	s := fetchServed(t, newDefaultDocuments(t))
	v3 := s.v3[schema.GroupVersion{Version: "v1"}].Components.Schemas
	defs := s.v2JSON["definitions"].(map[string]any)
	cases := []struct {
		name, v2Type, format string
		v3OneOf              []string
	}{
		{"io.k8s.apimachinery.pkg.api.resource.Quantity", "string", "", []string{"string", "number"}},
		{"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "string", "int-or-string", []string{"integer", "string"}},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.Time", "string", "date-time", nil},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", "string", "date-time", nil},
	}
	for _, c := range cases {
		v2 := defs[c.name].(map[string]any)
		if v2["type"] != c.v2Type || (v2["format"] != nil && v2["format"] != c.format) || (c.format != "" && v2["format"] != c.format) {
			t.Errorf("v2 %s = type %v format %v, want %s %q", c.name, v2["type"], v2["format"], c.v2Type, c.format)
		}
		if v2["description"] == "" || v2["description"] == nil {
			t.Errorf("v2 %s has no description", c.name)
		}
		def, ok := v3[c.name]
		if !ok {
			if c.name == "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" {
				continue // core/v1 refers to it only through events.k8s.io
			}
			t.Fatalf("v3 api/v1 lacks %s", c.name)
		}
		var oneOf []string
		for _, o := range def.OneOf {
			oneOf = append(oneOf, o.Type...)
		}
		if !slices.Equal(oneOf, c.v3OneOf) {
			t.Errorf("v3 %s oneOf %v, want %v", c.name, oneOf, c.v3OneOf)
		}
		if c.v3OneOf != nil && len(def.Type) != 0 {
			t.Errorf("v3 %s has type %v besides oneOf", c.name, def.Type)
		}
	}
	// []byte is base64 in a string; Secret.data is a map of them.
	data := defs["io.k8s.api.core.v1.Secret"].(map[string]any)["properties"].(map[string]any)["data"].(map[string]any)
	item := data["additionalProperties"].(map[string]any)
	if data["type"] != "object" || item["type"] != "string" || item["format"] != "byte" {
		t.Errorf("Secret.data = %v, want an object of string/byte", data)
	}
	// Integer widths.
	props := defs["io.k8s.api.core.v1.PodSpec"].(map[string]any)["properties"].(map[string]any)
	if f := props["terminationGracePeriodSeconds"].(map[string]any)["format"]; f != "int64" {
		t.Errorf("terminationGracePeriodSeconds format %v, want int64", f)
	}
	if f := props["priority"].(map[string]any)["format"]; f != "int32" {
		t.Errorf("priority format %v, want int32", f)
	}
}

// TestEveryServedKindHasDefinition checks each kind and list kind through
// both clients' eyes: kubectl's v2 model index (by GVK, from the protobuf
// document) and the v3 document of the kind's group-version.
func TestEveryServedKindHasDefinition(t *testing.T) {
	s := fetchServed(t, newDefaultDocuments(t))
	models, err := proto.NewOpenAPIData(s.v2)
	if err != nil {
		t.Fatalf("kubectl's parser rejects the v2 document: %v", err)
	}
	byGVK := map[schema.GroupVersionKind]string{}
	for _, name := range models.ListModels() {
		// As kubectl indexes them: a YAML list of maps.
		list, _ := models.LookupModel(name).GetExtensions()[extGVK].([]any)
		for _, item := range list {
			m, ok := item.(map[any]any)
			if !ok {
				t.Fatalf("%s: %s entry is a %T", name, extGVK, item)
			}
			gvk := schema.GroupVersionKind{}
			gvk.Group, _ = m["group"].(string)
			gvk.Version, _ = m["version"].(string)
			gvk.Kind, _ = m["kind"].(string)
			byGVK[gvk] = name
		}
	}
	for _, r := range DefaultResources() {
		gvks := []schema.GroupVersionKind{r.GVK}
		if r.List != nil {
			gvks = append(gvks, r.GVK.GroupVersion().WithKind(r.GVK.Kind+"List"))
		}
		for _, gvk := range gvks {
			name, ok := byGVK[gvk]
			if !ok {
				t.Errorf("v2: no definition for %s", gvk)
				continue
			}
			if want := modelName(reflectTypeOf(t, r, gvk)); name != want {
				t.Errorf("v2: %s is %q, want %q", gvk, name, want)
			}
			doc := s.v3[gvk.GroupVersion()]
			if doc == nil {
				t.Errorf("v3: no document for %s", gvk.GroupVersion())
				continue
			}
			if v3Name, _ := schemaForKind(t, doc, gvk); v3Name != name {
				t.Errorf("v3 %s: %s is %q, want %q", gvk.GroupVersion(), gvk, v3Name, name)
			}
		}
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		{Group: "policy", Version: "v1", Kind: "Eviction"},
		{Version: "v1", Kind: "Binding"},
		{Version: "v1", Kind: "Status"},
		{Version: "v1", Kind: "DeleteOptions"},
		{Group: "apps", Version: "v1", Kind: "DeleteOptions"},
	} {
		if _, ok := byGVK[gvk]; !ok {
			t.Errorf("v2: no definition for %s", gvk)
		}
	}
}

func reflectTypeOf(t *testing.T, r Resource, gvk schema.GroupVersionKind) reflect.Type {
	t.Helper()
	if gvk == r.GVK {
		return typeOf(r.Object)
	}
	return typeOf(r.List)
}

// typeOf is the struct type behind a pointer.
func typeOf(v any) reflect.Type { return reflect.TypeOf(v).Elem() }

// TestReferencesResolve checks every $ref of every document points at a
// definition of the same document: clients resolve them locally.
func TestReferencesResolve(t *testing.T) {
	docs := newDefaultDocuments(t)
	check := func(where string, raw []byte, prefix string, defsOf func(map[string]any) map[string]any) {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		defs := defsOf(doc)
		count := 0
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if ref, ok := v["$ref"].(string); ok {
					count++
					if !strings.HasPrefix(ref, prefix) {
						t.Errorf("%s: $ref %q is not under %s", where, ref, prefix)
					} else if _, ok := defs[strings.TrimPrefix(ref, prefix)]; !ok {
						t.Errorf("%s: $ref %q does not resolve", where, ref)
					}
				}
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(doc)
		if count == 0 {
			t.Errorf("%s: no references at all", where)
		}
	}
	check("v2", docs.v2JSON.raw, "#/definitions/", func(d map[string]any) map[string]any { return d["definitions"].(map[string]any) })
	for gv, v := range docs.v3 {
		check("v3 "+gv, v.json.raw, "#/components/schemas/", func(d map[string]any) map[string]any {
			return d["components"].(map[string]any)["schemas"].(map[string]any)
		})
	}
}

// TestWriteOperationsTakeFieldValidation checks every POST, PUT and PATCH
// of every document lists dryRun, fieldManager and fieldValidation among
// its own parameters (where kubectl looks), and names its kind.
func TestWriteOperationsTakeFieldValidation(t *testing.T) {
	s := fetchServed(t, newDefaultDocuments(t))
	writes := 0
	for gv, doc := range s.v3 {
		for path, item := range doc.Paths.Paths {
			for method, op := range map[string]*spec3.Operation{"post": item.Post, "put": item.Put, "patch": item.Patch} {
				if op == nil || strings.HasSuffix(path, "/exec") || strings.HasSuffix(path, "/attach") || strings.HasSuffix(path, "/portforward") {
					continue
				}
				writes++
				var names []string
				for _, p := range op.Parameters {
					names = append(names, p.Name)
				}
				for _, want := range []string{"dryRun", "fieldManager", "fieldValidation"} {
					if !slices.Contains(names, want) {
						t.Errorf("v3 %s %s %s: parameters %v lack %s", gv, method, path, names, want)
					}
				}
				var gvk map[string]string
				if err := op.Extensions.GetObject(extGVK, &gvk); err != nil || gvk["kind"] == "" {
					t.Errorf("v3 %s %s %s: no %s", gv, method, path, extGVK)
				}
				if method == "patch" {
					if _, ok := op.RequestBody.Content[mimeStrategicPatch]; !ok {
						t.Errorf("v3 %s patch %s: request body lacks %s", gv, path, mimeStrategicPatch)
					}
				}
			}
		}
	}
	if writes < 80 {
		t.Errorf("only %d write operations found", writes)
	}
	// The pod operations kubectl apply and create use, in the v2 protobuf.
	for _, path := range s.v2.GetPaths().GetPath() {
		if path.GetName() != "/api/v1/namespaces/{namespace}/pods" && path.GetName() != "/api/v1/namespaces/{namespace}/pods/{name}" {
			continue
		}
		for _, op := range []*openapi_v2.Operation{path.GetValue().GetPost(), path.GetValue().GetPut(), path.GetValue().GetPatch()} {
			if op == nil {
				continue
			}
			found := false
			for _, p := range op.GetParameters() {
				if p.GetParameter().GetNonBodyParameter().GetQueryParameterSubSchema().GetName() == "fieldValidation" {
					found = true
				}
			}
			if !found {
				t.Errorf("v2 %s %s: no inline fieldValidation query parameter", path.GetName(), op.GetOperationId())
			}
		}
	}
}

func TestPathsAndSubresources(t *testing.T) {
	s := fetchServed(t, newDefaultDocuments(t))
	core := s.v3[schema.GroupVersion{Version: "v1"}].Paths.Paths
	apps := s.v3[schema.GroupVersion{Group: "apps", Version: "v1"}].Paths.Paths
	type want struct {
		paths   map[string]*spec3.Path
		path    string
		methods []string
		kind    string
		action  string
	}
	for _, w := range []want{
		{core, "/api/v1/namespaces/{namespace}/pods", []string{"get", "post", "delete"}, "Pod", ""},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}", []string{"get", "put", "patch", "delete"}, "Pod", ""},
		{core, "/api/v1/pods", []string{"get"}, "Pod", "list"},
		{core, "/api/v1/watch/namespaces/{namespace}/pods", []string{"get"}, "Pod", "watchlist"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/status", []string{"get", "put", "patch"}, "Pod", ""},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/binding", []string{"post"}, "Binding", "post"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/eviction", []string{"post"}, "Eviction", "post"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/log", []string{"get"}, "Pod", "get"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/exec", []string{"get", "post"}, "PodExecOptions", "connect"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/attach", []string{"get", "post"}, "PodAttachOptions", "connect"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/portforward", []string{"get", "post"}, "PodPortForwardOptions", "connect"},
		{core, "/api/v1/nodes/{name}/status", []string{"get", "put", "patch"}, "Node", ""},
		{core, "/api/v1/namespaces", []string{"get", "post"}, "Namespace", ""},
		{apps, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", []string{"get", "put", "patch"}, "Scale", ""},
		{apps, "/apis/apps/v1/namespaces/{namespace}/replicasets/{name}/status", []string{"get", "put", "patch"}, "ReplicaSet", ""},
	} {
		item, ok := w.paths[w.path]
		if !ok {
			t.Errorf("no path %s", w.path)
			continue
		}
		ops := map[string]*spec3.Operation{"get": item.Get, "put": item.Put, "post": item.Post, "patch": item.Patch, "delete": item.Delete}
		for method, op := range ops {
			if slices.Contains(w.methods, method) != (op != nil) {
				t.Errorf("%s %s: present=%v, want %v", method, w.path, op != nil, slices.Contains(w.methods, method))
			}
			if op == nil {
				continue
			}
			var gvk map[string]string
			if err := op.Extensions.GetObject(extGVK, &gvk); err != nil || gvk["kind"] != w.kind {
				t.Errorf("%s %s: gvk %v, want kind %s", method, w.path, gvk, w.kind)
			}
			if action, _ := op.Extensions.GetString(extAction); w.action != "" && action != w.action {
				t.Errorf("%s %s: action %q, want %q", method, w.path, action, w.action)
			}
		}
	}
	// Namespaces have no deletecollection upstream.
	if core["/api/v1/namespaces"].Delete != nil {
		t.Error("DELETE /api/v1/namespaces is documented")
	}
	// Each group-version's document holds its own paths only.
	for gv, doc := range s.v3 {
		prefix := "/" + v3Key(gv) + "/"
		for path := range doc.Paths.Paths {
			if !strings.HasPrefix(path, prefix) {
				t.Errorf("v3 %s holds %s", gv, path)
			}
		}
	}
}

// TestStrategicMergePatchFromDocuments computes a strategic merge patch the
// way kubectl apply does, from each document's patch metadata: changing one
// container's image must patch that container by name.
func TestStrategicMergePatchFromDocuments(t *testing.T) {
	s := fetchServed(t, newDefaultDocuments(t))
	original := []byte(`{"spec":{"containers":[{"name":"app","image":"a:1"},{"name":"side","image":"b"}]}}`)
	modified := []byte(`{"spec":{"containers":[{"name":"app","image":"a:2"},{"name":"side","image":"b"}]}}`)
	want := `{"spec":{"$setElementOrder/containers":[{"name":"app"},{"name":"side"}],"containers":[{"image":"a:2","name":"app"}]}}`

	doc := s.v3[schema.GroupVersion{Version: "v1"}]
	_, pod := schemaForKind(t, doc, corev1.SchemeGroupVersion.WithKind("Pod"))
	v3Meta := strategicpatch.PatchMetaFromOpenAPIV3{Schema: pod, SchemaList: doc.Components.Schemas}
	patch, err := strategicpatch.CreateTwoWayMergePatchUsingLookupPatchMeta(original, modified, v3Meta)
	if err != nil {
		t.Fatalf("v3 patch: %v", err)
	}
	if string(patch) != want {
		t.Errorf("v3 patch\n got %s\nwant %s", patch, want)
	}

	models, err := proto.NewOpenAPIData(s.v2)
	if err != nil {
		t.Fatal(err)
	}
	v2Meta := strategicpatch.NewPatchMetaFromOpenAPI(models.LookupModel("io.k8s.api.core.v1.Pod"))
	patch, err = strategicpatch.CreateTwoWayMergePatchUsingLookupPatchMeta(original, modified, v2Meta)
	if err != nil {
		t.Fatalf("v2 patch: %v", err)
	}
	if string(patch) != want {
		t.Errorf("v2 patch\n got %s\nwant %s", patch, want)
	}
}

func TestDescriptionsOfServedKinds(t *testing.T) {
	docs := newDefaultDocuments(t)
	for _, r := range DefaultResources() {
		name := modelName(typeOf(r.Object))
		def := docs.Swagger().Definitions[name]
		if def.Description == "" {
			t.Errorf("%s has no description", name)
		}
		for field, prop := range def.Properties {
			if prop.Description == "" {
				t.Errorf("%s.%s has no description", name, field)
			}
		}
	}
}

func TestNewRejectsBadResources(t *testing.T) {
	pod := DefaultResources()[1]
	cases := []struct {
		name   string
		mutate func(r *Resource)
		want   string
	}{
		{"no resource name", func(r *Resource) { r.Resource = "" }, "resource: must not be empty"},
		{"no kind", func(r *Resource) { r.GVK.Kind = "" }, "version and kind are required"},
		{"no object", func(r *Resource) { r.Object = nil }, "object: must be a zero value"},
		{"unknown verb", func(r *Resource) { r.Verbs = []string{"get", "fly"} }, `unknown verb "fly"`},
		{"list verb without list type", func(r *Resource) { r.List = nil }, `list: required for verb`},
		{"unknown subresource", func(r *Resource) { r.Subresources = []string{"proxy"} }, `unknown subresource "proxy"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := pod
			c.mutate(&r)
			_, err := New([]Resource{r}, Info{})
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("New: %v, want ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "resources[0]") {
				t.Errorf("error %q does not name the field (%q)", err, c.want)
			}
		})
	}
	if _, err := New(nil, Info{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("New(nil): %v, want ErrInvalidArgument", err)
	}
	if _, err := New([]Resource{pod, pod}, Info{}); err == nil || !strings.Contains(err.Error(), "duplicate resource v1/pods") {
		t.Errorf("New(duplicate): %v", err)
	}
}

// TestServerSideApplyPatchType checks Info.ServerSideApply adds the apply
// patch type and the force parameter to PATCH operations, and only then.
func TestServerSideApplyPatchType(t *testing.T) {
	for _, ssa := range []bool{false, true} {
		docs, err := New(DefaultResources(), Info{ServerSideApply: ssa})
		if err != nil {
			t.Fatal(err)
		}
		patches := 0
		for path, item := range docs.Swagger().Paths.Paths {
			op := item.Patch
			if op == nil {
				continue
			}
			patches++
			hasForce := slices.ContainsFunc(op.Parameters, func(p spec.Parameter) bool { return p.Name == "force" })
			if slices.Contains(op.Consumes, mimeApplyPatch) != ssa || hasForce != ssa {
				t.Errorf("ServerSideApply=%v: PATCH %s consumes %v, force parameter %v", ssa, path, op.Consumes, hasForce)
			}
			for _, want := range []string{mimeJSONPatch, mimeMergePatch, mimeStrategicPatch} {
				if !slices.Contains(op.Consumes, want) {
					t.Errorf("PATCH %s does not consume %s", path, want)
				}
			}
		}
		if patches == 0 {
			t.Fatal("no PATCH operations")
		}
	}
}
