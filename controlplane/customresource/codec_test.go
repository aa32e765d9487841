package customresource

import (
	"bytes"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// twoVersions is a CRD served in v1 and v2 (stored in v1), None conversion:
// v1 has spec.size (default "medium"), v2 spec.length.
func twoVersions() *apiextensionsv1.CustomResourceDefinition {
	schemaWith := func(field string, def string) *apiextensionsv1.CustomResourceValidation {
		p := apiextensionsv1.JSONSchemaProps{Type: "string"}
		if def != "" {
			p.Default = &apiextensionsv1.JSON{Raw: []byte(`"` + def + `"`)}
		}
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				field: p, "free": {Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", UID: "u1"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:      apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaWith("size", "medium")},
				{Name: "v2", Served: true, Schema: schemaWith("length", "")},
			}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{
			Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}},
	}
}

func newTestServing(t *testing.T) *Serving {
	t.Helper()
	converters, err := conversion.NewCRConverterFactory(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Serving{cfg: Config{Storage: func(gr schema.GroupResource) (generic.RESTOptions, error) {
		// No etcd: the tests exercise the codecs, not the stores.
		noStore := func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object,
			func() runtime.Object, apistorage.AttrFunc, apistorage.IndexerFuncs, *cache.Indexers) (apistorage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		}
		return generic.RESTOptions{StorageConfig: storagebackend.NewDefaultConfig("/registry", unstructured.UnstructuredJSONScheme).ForResource(gr),
			ResourcePrefix: gr.Group + "/" + gr.Resource, Decorator: noStore}, nil
	}}, converters: converters}
}

// TestDecodePrunesDefaultsAndReportsUnknownFields decodes request bodies
// as the handler does: defaults of the body's version applied, unknown
// fields pruned, and named (with their path) by the strict decoder.
func TestDecodePrunesDefaultsAndReportsUnknownFields(t *testing.T) {
	s := newTestServing(t)
	sv, err := s.build(twoVersions())
	if err != nil {
		t.Fatal(err)
	}
	defer sv.close()
	res := sv.byVersion["v1"]
	ser := res.Custom.Serializer
	info, ok := runtime.SerializerInfoForMediaType(ser.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	body := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","bogus":1},"spec":{"junk":1,"free":{"any":2}}}`)
	gvk := res.GroupVersionKind()
	into, _ := res.Custom.Creater.New(gvk)
	obj, _, err := ser.DecoderToVersion(info.StrictSerializer, gvk.GroupVersion()).Decode(body, &gvk, into)
	strict, isStrict := runtime.AsStrictDecodingError(err)
	if !isStrict || !strings.Contains(strict.Error(), `unknown field "spec.junk"`) || !strings.Contains(strict.Error(), `unknown field "metadata.bogus"`) {
		t.Fatalf("strict decode: %v; want unknown spec.junk and metadata.bogus", err)
	}
	u := obj.(*unstructured.Unstructured)
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	if spec["junk"] != nil || spec["size"] != "medium" || spec["free"].(map[string]any)["any"] == nil {
		t.Errorf("decoded spec %v: want junk pruned, size defaulted, free kept", spec)
	}

	// Lenient decoding prunes without complaint.
	into, _ = res.Custom.Creater.New(gvk)
	if _, _, err := ser.DecoderToVersion(info.Serializer, gvk.GroupVersion()).Decode(body, &gvk, into); err != nil {
		t.Errorf("lenient decode: %v", err)
	}
}

// TestEncodeConvertsAndPrunesPerVersion writes a v1 object through the
// v2 encoder: None conversion changes apiVersion, and the storage codec of
// the v2 store reads the stored v1 object as v2, pruned to v2's schema.
func TestEncodeConvertsAndPrunesPerVersion(t *testing.T) {
	s := newTestServing(t)
	crd := twoVersions()
	sv, err := s.build(crd)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.close()
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": "large"}}}
	ser := sv.byVersion["v2"].Custom.Serializer
	info, _ := runtime.SerializerInfoForMediaType(ser.SupportedMediaTypes(), runtime.ContentTypeJSON)
	var buf bytes.Buffer
	if err := ser.EncoderForVersion(info.Serializer, schema.GroupVersion{Group: "example.com", Version: "v2"}).Encode(w, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"apiVersion":"example.com/v2"`) {
		t.Errorf("v1 object encoded for v2: %s", buf.String())
	}

	safe, _, err := s.converters.NewConverter(crd)
	if err != nil {
		t.Fatal(err)
	}
	sch, _, err := schemasOf(crd)
	if err != nil {
		t.Fatal(err)
	}
	opts := storageOptions{factory: s.cfg.Storage, schemas: sch, converter: safe,
		encode: schema.GroupVersion{Group: "example.com", Version: "v1"}, decode: schema.GroupVersion{Group: "example.com", Version: "v2"}}
	ro, err := opts.GetRESTOptions(schema.GroupResource{Group: "example.com", Resource: "widgets"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	codec := ro.StorageConfig.Codec
	v2 := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v2", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"length": "3m"}}}
	buf.Reset()
	if err := codec.Encode(v2, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"apiVersion":"example.com/v1"`) || strings.Contains(buf.String(), "length") {
		t.Errorf("stored form of a v2 object: %s (want v1, v2-only fields pruned)", buf.String())
	}
	// As the store reads: into an object of the store's kind.
	into := &unstructured.Unstructured{}
	into.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"})
	back, _, err := codec.Decode(buf.Bytes(), nil, into)
	if err != nil {
		t.Fatal(err)
	}
	if back.GetObjectKind().GroupVersionKind().Version != "v2" {
		t.Errorf("read back as %v, want v2", back.GetObjectKind().GroupVersionKind())
	}
}
