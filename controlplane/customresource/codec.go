package customresource

import (
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/generic"
)

// schemas are a CRD's structural schemas by version, with what the codec
// needs to know about the kind.
type schemas struct {
	byVersion map[string]*structuralschema.Structural
	gk        schema.GroupKind
	// preserveUnknown is spec.preserveUnknownFields (no pruning).
	preserveUnknown bool
}

// coercer does to an unstructured object what decoding into a Go struct
// does to a built-in one: ObjectMeta checked (and, for stored objects,
// malformed fields dropped), unknown fields pruned along the structural
// schema, null values without default removed where not nullable.
type coercer struct {
	schemas
	// dropInvalidMetadata and repairGeneration apply to objects read from
	// etcd, written before ObjectMeta was validated.
	dropInvalidMetadata bool
	repairGeneration    bool
	// unknownPaths reports the pruned fields (strict decoding).
	unknownPaths bool
}

// apply coerces u in place and returns the paths of the fields it pruned
// (when unknownPaths).
func (c coercer) apply(u *unstructured.Unstructured) ([]string, error) {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return nil, err
	}
	objectMeta, foundMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields: c.dropInvalidMetadata, ReturnUnknownFieldPaths: c.unknownPaths,
	})
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	// Other kinds (DeleteOptions, ...) pass through untouched.
	if gv.Group == c.gk.Group && kind == c.gk.Kind {
		s := c.byVersion[gv.Version]
		if !c.preserveUnknown {
			unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, s, true,
				structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: c.unknownPaths})...)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s)
		}
		err, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, s, false, schemaobjectmeta.CoerceOptions{
			DropInvalidFields: c.dropInvalidMetadata, ReturnUnknownFieldPaths: c.unknownPaths,
		})
		if err != nil {
			return nil, err
		}
		unknown = append(unknown, paths...)
		if c.repairGeneration && objectMeta.Generation == 0 {
			objectMeta.Generation = 1
		}
	}
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// coercingDecoder decodes with its delegate, then coerces; with
// unknownPaths, pruned fields come back as a strict decoding error.
type coercingDecoder struct {
	delegate runtime.Decoder
	coercer  coercer
}

func (d coercingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	var strict []error
	obj, gvk, err := d.delegate.Decode(data, defaults, into)
	if err != nil {
		se, ok := runtime.AsStrictDecodingError(err)
		if !ok || obj == nil {
			return nil, gvk, err
		}
		strict = se.Errors()
	}
	var unknown []string
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if unknown, err = d.coercer.apply(u); err != nil {
			return nil, gvk, err
		}
	}
	if d.coercer.unknownPaths && (len(strict) > 0 || len(unknown) > 0) {
		for _, p := range unknown {
			strict = append(strict, fmt.Errorf(`unknown field "%s"`, p))
		}
		return obj, gvk, runtime.NewStrictDecodingError(strict)
	}
	return obj, gvk, nil
}

// coercingConverter converts with its delegate (the CRD's conversion),
// then coerces the result along the target version's schema.
type coercingConverter struct {
	delegate runtime.ObjectConvertor
	coercer  coercer
}

func (c coercingConverter) Convert(in, out, context any) error {
	if err := c.delegate.Convert(in, out, context); err != nil {
		return err
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		_, err := c.coercer.apply(u)
		return err
	}
	return nil
}

func (c coercingConverter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	out, err := c.delegate.ConvertToVersion(in, gv)
	if err != nil {
		return nil, err
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		if _, err := c.coercer.apply(u); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c coercingConverter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return c.delegate.ConvertFieldLabel(gvk, label, value)
}

// creator makes empty unstructured objects of a kind.
type creator struct{}

func (creator) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// typer types unstructured objects by their apiVersion and kind, and the
// option objects through the parameter scheme.
type typer struct {
	params       runtime.ObjectTyper
	unstructured runtime.ObjectTyper
}

func newTyper(params runtime.ObjectTyper) typer {
	return typer{params: params, unstructured: crdserverscheme.NewUnstructuredObjectTyper()}
}

func (t typer) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return t.unstructured.ObjectKinds(obj)
	}
	return t.params.ObjectKinds(obj)
}

func (t typer) Recognizes(gvk schema.GroupVersionKind) bool {
	return t.params.Recognizes(gvk) || t.unstructured.Recognizes(gvk)
}

// defaulter applies the structural schema's defaults of the object's version.
type defaulter struct {
	schemas
}

func (d defaulter) Default(in runtime.Object) {
	u, ok := in.(runtime.Unstructured)
	if !ok || u.GetObjectKind().GroupVersionKind().GroupKind() != d.gk {
		return
	}
	structuraldefaulting.Default(u.UnstructuredContent(), d.byVersion[u.GetObjectKind().GroupVersionKind().Version])
}

// negotiated is the custom resource's runtime.NegotiatedSerializer:
// JSON and YAML (no protobuf: custom resources have no protobuf schema),
// decoding with pruning and defaulting, encoding through the CRD's
// conversion.
type negotiated struct {
	schemas
	typer     typer
	converter runtime.ObjectConvertor
	plain     runtime.ObjectConvertor // for decoding: no conversion
	media     []runtime.SerializerInfo
}

func newNegotiated(s schemas, t typer, converter runtime.ObjectConvertor, plain runtime.ObjectConvertor) negotiated {
	c := creator{}
	opts := func(o json.SerializerOptions) *json.Serializer {
		return json.NewSerializerWithOptions(json.DefaultMetaFactory, c, t, o)
	}
	return negotiated{schemas: s, typer: t, converter: converter, plain: plain, media: []runtime.SerializerInfo{
		{
			MediaType: runtime.ContentTypeJSON, MediaTypeType: "application", MediaTypeSubType: "json", EncodesAsText: true,
			Serializer:       opts(json.SerializerOptions{}),
			PrettySerializer: opts(json.SerializerOptions{Pretty: true}),
			StrictSerializer: opts(json.SerializerOptions{Strict: true}),
			StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: opts(json.SerializerOptions{}), Framer: json.Framer},
		},
		{
			MediaType: runtime.ContentTypeYAML, MediaTypeType: "application", MediaTypeSubType: "yaml", EncodesAsText: true,
			Serializer:       opts(json.SerializerOptions{Yaml: true}),
			StrictSerializer: opts(json.SerializerOptions{Yaml: true, Strict: true}),
		},
	}}
}

func (n negotiated) SupportedMediaTypes() []runtime.SerializerInfo { return n.media }

func (n negotiated) EncoderForVersion(encoder runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	return versioning.NewCodec(encoder, nil, n.converter, creator{}, n.typer, nil, gv, nil, "customresource")
}

func (n negotiated) DecoderToVersion(decoder runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	strict := false
	if s, ok := decoder.(*json.Serializer); ok {
		strict = s.IsStrict()
	}
	d := coercingDecoder{delegate: decoder, coercer: coercer{schemas: n.schemas, unknownPaths: strict}}
	return versioning.NewCodec(nil, d, n.plain, creator{}, n.typer, defaulter{n.schemas}, nil, gv, "customresource")
}

// storageOptions gives the CRD's stores their codec: unstructured JSON in
// etcd, written in the storage version, read (converted and coerced) in
// the version the store serves.
type storageOptions struct {
	factory   func(gr schema.GroupResource) (generic.RESTOptions, error)
	schemas   schemas
	converter runtime.ObjectConvertor
	encode    schema.GroupVersion
	decode    schema.GroupVersion
}

func (o storageOptions) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	ret, err := o.factory(resource)
	if err != nil {
		return ret, err
	}
	d := coercingDecoder{delegate: ret.StorageConfig.Codec, coercer: coercer{schemas: o.schemas, dropInvalidMetadata: true, repairGeneration: true}}
	c := coercingConverter{delegate: o.converter, coercer: coercer{schemas: o.schemas}}
	ret.StorageConfig.Codec = versioning.NewCodec(ret.StorageConfig.Codec, d, c, creator{},
		crdserverscheme.NewUnstructuredObjectTyper(), defaulter{o.schemas}, o.encode, o.decode, "customresource-storage")
	ret.StorageConfig.EncodeVersioner = o.encode
	return ret, nil
}

// objectInterfaces is what admission plugins get for custom resources.
type objectInterfaces struct {
	creater   runtime.ObjectCreater
	typer     runtime.ObjectTyper
	defaulter runtime.ObjectDefaulter
	converter runtime.ObjectConvertor
	mapper    runtime.EquivalentResourceMapper
}

var _ admission.ObjectInterfaces = objectInterfaces{}

func (o objectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return o.creater }
func (o objectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return o.typer }
func (o objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return o.defaulter }
func (o objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return o.converter }
func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o.mapper
}

// parameterScheme decodes the option objects of requests to gv.
func parameterScheme(gv schema.GroupVersion) *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddUnversionedTypes(gv, &metav1.ListOptions{}, &metav1.GetOptions{}, &metav1.DeleteOptions{})
	return s
}
