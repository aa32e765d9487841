package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"berth/internal/errdefs"
)

// The vendor extensions the documents carry, as upstream names them.
const (
	extGVK           = "x-kubernetes-group-version-kind"
	extAction        = "x-kubernetes-action"
	extPatchStrategy = "x-kubernetes-patch-strategy"
	extPatchMergeKey = "x-kubernetes-patch-merge-key"
	extListType      = "x-kubernetes-list-type"
	extListMapKeys   = "x-kubernetes-list-map-keys"
	extMapType       = "x-kubernetes-map-type"
)

// definitionsPrefix is where Swagger 2.0 references point.
const definitionsPrefix = "#/definitions/"

// Interfaces of the k8s.io Go types the builder reads.
type (
	modelNamer     interface{ OpenAPIModelName() string }
	swaggerDocer   interface{ SwaggerDoc() map[string]string }
	schemaTyper    interface{ OpenAPISchemaType() []string }
	schemaFormater interface{ OpenAPISchemaFormat() string }
	v3OneOfTyper   interface{ OpenAPIV3OneOfTypes() []string }
)

// metadataDescription describes an object's metadata field where its type
// does not.
const metadataDescription = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"

// builtinDescriptions describe the types that serialize as a scalar and carry
// no SwaggerDoc.
var builtinDescriptions = map[string]string{
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time":      "Time is a timestamp, written as an RFC 3339 string in UTC with second precision.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "MicroTime is a timestamp with microsecond precision, written as an RFC 3339 string in UTC.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Duration":  "Duration is a length of time, written as a Go duration string such as \"1h30m\" or \"15s\".",
	"io.k8s.apimachinery.pkg.api.resource.Quantity": "Quantity is a fixed-point number written as a string with an optional suffix: a binary SI suffix " +
		"(Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI suffix (m, k, M, G, T, P, E) or a decimal exponent (e3, E6). " +
		"Examples: \"100m\" (0.1), \"2\", \"1.5Gi\", \"1e3\".",
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": "IntOrString holds either an integer or a string, and is written in JSON as whichever it holds.",
}

// definitions turns Go types into Swagger 2.0 definitions by reflection. It
// is used once per New and is not safe for concurrent use.
type definitions struct {
	defs spec.Definitions
	// names maps each visited Go type to its definition name.
	names map[reflect.Type]string
	// types maps each definition name back to its Go type, to catch two
	// types claiming one name.
	types map[string]reflect.Type
	// oneOf holds, per definition name, the OpenAPI v3 oneOf types.
	oneOf map[string][]string
	// smd is the structured-merge-diff schema of the k8s.io/api types.
	smd *smdschema.Schema
}

func newDefinitions(smd *smdschema.Schema) *definitions {
	return &definitions{
		defs:  spec.Definitions{},
		names: map[reflect.Type]string{},
		types: map[string]reflect.Type{},
		oneOf: map[string][]string{},
		smd:   smd,
	}
}

// add makes sure t (a struct, or a pointer to one) has a definition and
// returns its name.
func (d *definitions) add(t reflect.Type) (string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name, ok := d.names[t]; ok {
		return name, nil
	}
	name := modelName(t)
	if name == "" {
		return "", fmt.Errorf("openapi: Go type %s has no package path to name its definition: %w", t, errdefs.ErrInvalidArgument)
	}
	if other, ok := d.types[name]; ok {
		return "", fmt.Errorf("openapi: Go types %s and %s both map to definition %q: %w", other, t, name, errdefs.ErrInvalidArgument)
	}
	// Record the name before the fields so recursive types terminate.
	d.names[t] = name
	d.types[name] = t
	def, err := d.definition(t, name)
	if err != nil {
		return "", err
	}
	d.defs[name] = def
	return name, nil
}

// modelName is the definition name upstream gives t.
func modelName(t reflect.Type) string {
	if n, ok := reflect.New(t).Elem().Interface().(modelNamer); ok {
		return n.OpenAPIModelName()
	}
	if t.PkgPath() == "" || t.Name() == "" {
		return ""
	}
	// "k8s.io/api/core/v1" → "io.k8s.api.core.v1": the domain reversed, then
	// the path.
	parts := strings.Split(t.PkgPath(), "/")
	domain := strings.Split(parts[0], ".")
	slices.Reverse(domain)
	return strings.Join(append(append(domain, parts[1:]...), t.Name()), ".")
}

// swaggerDoc returns t's field descriptions keyed by JSON name, the type's
// own under "".
func swaggerDoc(t reflect.Type) map[string]string {
	if d, ok := reflect.New(t).Elem().Interface().(swaggerDocer); ok {
		return d.SwaggerDoc()
	}
	if d, ok := reflect.New(t).Interface().(swaggerDocer); ok {
		return d.SwaggerDoc()
	}
	return nil
}

// definition builds the schema of the named type t.
func (d *definitions) definition(t reflect.Type, name string) (spec.Schema, error) {
	doc := swaggerDoc(t)
	zero := reflect.New(t).Elem().Interface()
	var s spec.Schema
	s.Description = doc[""]
	if typer, ok := zero.(schemaTyper); ok {
		s.Type = typer.OpenAPISchemaType()
		if f, ok := zero.(schemaFormater); ok {
			s.Format = f.OpenAPISchemaFormat()
		}
		if o, ok := zero.(v3OneOfTyper); ok {
			d.oneOf[name] = o.OpenAPIV3OneOfTypes()
		}
		if s.Description == "" {
			s.Description = builtinDescriptions[name]
		}
		return s, nil
	}
	if t.Kind() != reflect.Struct {
		return s, fmt.Errorf("openapi: definition %q: Go type %s is a %s, not a struct: %w", name, t, t.Kind(), errdefs.ErrInvalidArgument)
	}
	s.Type = []string{"object"}
	if err := d.fields(t, name, doc, &s); err != nil {
		return s, err
	}
	if td, ok := d.smdType(name); ok && td.Map != nil && td.Map.ElementRelationship == smdschema.Atomic {
		s.AddExtension(extMapType, "atomic")
	}
	return s, nil
}

// fields adds t's JSON fields to s, flattening inlined structs into it.
func (d *definitions) fields(t reflect.Type, defName string, doc map[string]string, s *spec.Schema) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		options := strings.Split(opts, ",")
		inline := slices.Contains(options, "inline") || (f.Anonymous && name == "")
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() != reflect.Struct {
				return fmt.Errorf("openapi: definition %q: inlined field %s is not a struct: %w", defName, f.Name, errdefs.ErrInvalidArgument)
			}
			if err := d.fields(ft, defName, swaggerDoc(ft), s); err != nil {
				return err
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		prop, err := d.schemaOf(f.Type)
		if err != nil {
			return fmt.Errorf("%w (field %s.%s)", err, defName, name)
		}
		prop.Description = doc[name]
		if prop.Description == "" && name == "metadata" {
			// Some kinds (CertificateSigningRequest) leave their metadata
			// undocumented; use the wording every other kind has.
			prop.Description = metadataDescription
		}
		if v := f.Tag.Get("patchStrategy"); v != "" {
			prop.AddExtension(extPatchStrategy, v)
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			prop.AddExtension(extPatchMergeKey, v)
		}
		d.mergeExtensions(defName, name, &prop)
		if s.Properties == nil {
			s.Properties = map[string]spec.Schema{}
		}
		s.Properties[name] = prop
		if isRequired(modelName(t)+"."+name, options) {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

// isRequired applies upstream's rule to the field key ("<definition>.<json
// name>" of the struct declaring it): a +required marker makes it required,
// an +optional marker optional, and otherwise it is required unless its json
// tag says omitempty. The markers are comments, so markedOptional and
// markedRequired list the fields where they disagree with the tag.
func isRequired(key string, jsonOptions []string) bool {
	switch {
	case markedRequired[key]:
		return true
	case markedOptional[key]:
		return false
	}
	return !slices.Contains(jsonOptions, "omitempty")
}

// schemaOf is the schema of a field of Go type t.
func (d *definitions) schemaOf(t reflect.Type) (spec.Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	_, scalar := reflect.New(t).Elem().Interface().(schemaTyper)
	if t.Kind() == reflect.Struct || scalar {
		name, err := d.add(t)
		if err != nil {
			return spec.Schema{}, err
		}
		return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(definitionsPrefix + name)}}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return scalarSchema("string", ""), nil
	case reflect.Bool:
		return scalarSchema("boolean", ""), nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return scalarSchema("integer", "int32"), nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return scalarSchema("integer", "int64"), nil
	case reflect.Float32:
		return scalarSchema("number", "float"), nil
	case reflect.Float64:
		return scalarSchema("number", "double"), nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return scalarSchema("string", "byte"), nil
		}
		item, err := d.schemaOf(t.Elem())
		if err != nil {
			return spec.Schema{}, err
		}
		s := scalarSchema("array", "")
		s.Items = &spec.SchemaOrArray{Schema: &item}
		return s, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return spec.Schema{}, fmt.Errorf("openapi: map key type %s is not a string: %w", t.Key(), errdefs.ErrInvalidArgument)
		}
		value, err := d.schemaOf(t.Elem())
		if err != nil {
			return spec.Schema{}, err
		}
		s := scalarSchema("object", "")
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: &value}
		return s, nil
	case reflect.Interface:
		// Any JSON value: no type, no properties.
		return spec.Schema{}, nil
	}
	return spec.Schema{}, fmt.Errorf("openapi: Go type %s (%s) has no OpenAPI equivalent: %w", t, t.Kind(), errdefs.ErrInvalidArgument)
}

func scalarSchema(typ, format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}, Format: format}}
}

// smdType looks a definition up in the structured-merge-diff schema.
func (d *definitions) smdType(name string) (smdschema.Atom, bool) {
	if d.smd == nil {
		return smdschema.Atom{}, false
	}
	td, ok := d.smd.FindNamedType(name)
	return td.Atom, ok
}

// mergeExtensions adds the list and map topology of field jsonName of
// definition defName, as the structured-merge-diff schema records it.
func (d *definitions) mergeExtensions(defName, jsonName string, prop *spec.Schema) {
	parent, ok := d.smdType(defName)
	if !ok || parent.Map == nil {
		return
	}
	field, ok := parent.Map.FindField(jsonName)
	if !ok {
		return
	}
	atom := field.Type.Inlined
	if field.Type.NamedType != nil {
		if atom, ok = d.smdType(*field.Type.NamedType); !ok {
			return
		}
	}
	switch {
	case atom.List != nil && prop.Type.Contains("array"):
		switch {
		case atom.List.ElementRelationship == smdschema.Atomic:
			prop.AddExtension(extListType, "atomic")
		case len(atom.List.Keys) > 0:
			prop.AddExtension(extListType, "map")
			prop.AddExtension(extListMapKeys, slices.Clone(atom.List.Keys))
		default:
			prop.AddExtension(extListType, "set")
		}
	case atom.Map != nil && prop.AdditionalProperties != nil && atom.Map.ElementRelationship == smdschema.Atomic:
		prop.AddExtension(extMapType, "atomic")
	}
}
