package customresource

import (
	"context"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"berth/controlplane/apiserver"
)

// served is what one CRD (at one spec and set of accepted names) serves:
// a resource per served version, each over its own store (all sharing the
// etcd keys, each decoding into its version), plus the stored version's
// store for the finalizer.
type served struct {
	spec          *apiextensionsv1.CustomResourceDefinitionSpec
	acceptedNames *apiextensionsv1.CustomResourceDefinitionNames
	byVersion     map[string]*apiserver.Resource
	storage       *customresource.REST // the storage version's store
	destroy       []func()
}

// build makes the stores and resources of crd, as upstream's
// getOrCreateServingInfoFor does.
func (s *Serving) build(crd *apiextensionsv1.CustomResourceDefinition) (_ *served, err error) {
	storageVersion, err := apihelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, err
	}
	names := crd.Status.AcceptedNames
	if names.Plural == "" || names.Singular == "" || names.Kind == "" || names.ListKind == "" {
		return nil, fmt.Errorf("CustomResourceDefinition %s has no accepted names yet", crd.Name)
	}
	group := crd.Spec.Group
	sch, internalSchemas, err := schemasOf(crd)
	if err != nil {
		return nil, err
	}

	safe, _, err := s.converters.NewConverter(crd)
	if err != nil {
		return nil, err
	}
	typeConverter, err := s.typeConverter(crd)
	if err != nil {
		return nil, err
	}
	replicasPaths := managedfields.ResourcePathMappings{}
	mapper := runtime.NewEquivalentResourceRegistry()
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: group, Version: v.Name}
		subs, _ := apihelpers.GetSubresourcesForVersion(crd, v.Name)
		if subs == nil || subs.Scale == nil {
			replicasPaths[gv.String()] = nil
		} else {
			var path fieldpath.Path
			for _, el := range strings.Split(strings.TrimPrefix(subs.Scale.SpecReplicasPath, "."), ".") {
				path = append(path, fieldpath.PathElement{FieldName: &el})
			}
			replicasPaths[gv.String()] = path
		}
		gvr := gv.WithResource(names.Plural)
		mapper.RegisterKindFor(gvr, "", gv.WithKind(names.Kind))
		if subs != nil && subs.Status != nil {
			mapper.RegisterKindFor(gvr, "status", gv.WithKind(names.Kind))
		}
		if subs != nil && subs.Scale != nil {
			mapper.RegisterKindFor(gvr, "scale", autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
		}
	}

	out := &served{spec: crd.Spec.DeepCopy(), acceptedNames: names.DeepCopy(), byVersion: map[string]*apiserver.Resource{}}
	defer func() {
		if err != nil {
			out.close()
		}
	}()
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	for _, v := range crd.Spec.Versions {
		if !v.Served && !v.Storage {
			continue
		}
		gv := schema.GroupVersion{Group: group, Version: v.Name}
		kind := gv.WithKind(names.Kind)
		params := parameterScheme(gv)
		t := newTyper(params)
		validator, _, err := apiservervalidation.NewSchemaValidator(internalSchemas[v.Name])
		if err != nil {
			return nil, err
		}
		subs, _ := apihelpers.GetSubresourcesForVersion(crd, v.Name)
		var statusSpec *apiextensions.CustomResourceSubresourceStatus
		var statusValidator apiservervalidation.SchemaValidator
		if subs != nil && subs.Status != nil {
			statusSpec = &apiextensions.CustomResourceSubresourceStatus{}
			if props := internalSchemas[v.Name]; props != nil && props.Properties != nil {
				if st, ok := props.Properties["status"]; ok {
					if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
						return nil, err
					}
				}
			}
		}
		var scaleSpec *apiextensions.CustomResourceSubresourceScale
		if subs != nil && subs.Scale != nil {
			scaleSpec = &apiextensions.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subs.Scale, scaleSpec, nil); err != nil {
				return nil, err
			}
		}
		table, err := tableconvertor.New(columnsFor(v))
		if err != nil {
			// An invalid printer column falls back to the default columns, as upstream.
			table, _ = tableconvertor.New(columnsFor(apiextensionsv1.CustomResourceDefinitionVersion{}))
		}
		strategy := customresource.NewStrategy(t, namespaced, kind, validator, statusValidator, sch.byVersion[v.Name],
			statusSpec, scaleSpec, v.SelectableFields)
		opts := storageOptions{factory: s.cfg.Storage, schemas: sch, converter: safe,
			encode: schema.GroupVersion{Group: group, Version: storageVersion}, decode: gv}
		st, err := customresource.NewStorage(gv.WithResource(names.Plural).GroupResource(), gv.WithResource(names.Singular).GroupResource(),
			kind, gv.WithKind(names.ListKind), strategy, opts, names.Categories, table, replicasPaths)
		if err != nil {
			return nil, err
		}
		out.destroy = append(out.destroy, st.CustomResource.Store.DestroyFunc)
		if v.Name == storageVersion {
			out.storage = st.CustomResource
		}
		if !v.Served {
			continue
		}
		def := defaulter{sch}
		c := creator{}
		custom := &apiserver.Custom{
			Serializer: newNegotiated(sch, t, safe, noConversion{}),
			Creater:    c, Typer: t,
			Objects: objectInterfaces{creater: c, typer: t, defaulter: def, converter: safe, mapper: mapper},
			ConvertFieldLabel: func(label, value string) (string, string, error) {
				return safe.ConvertFieldLabel(kind, label, value)
			},
			FieldManagers: map[string]*managedfields.FieldManager{},
		}
		if v.Deprecated {
			w := deprecationWarning(v.Name, crd.Spec)
			if v.DeprecationWarning != nil {
				w = *v.DeprecationWarning
			}
			custom.Warnings = []string{w}
		}
		fm, err := managedfields.NewDefaultCRDFieldManager(typeConverter, safe, def, c, kind, gv, "",
			fieldpath.NewExcludeFilterSetMap(st.CustomResource.GetResetFields()))
		if err != nil {
			return nil, err
		}
		custom.FieldManagers[""] = fm
		res := &apiserver.Resource{
			GroupVersion: gv, Resource: names.Plural, Kind: names.Kind, SingularName: names.Singular,
			Namespaced: namespaced, ShortNames: names.ShortNames, Categories: names.Categories,
			Store:        &store{REST: st.CustomResource, crds: s, name: crd.Name},
			Subresources: map[string]apiserver.Subresource{},
			Custom:       custom,
		}
		if st.Status != nil {
			res.Subresources["status"] = apiserver.Subresource{Kind: kind, Storage: statusStore{st.Status}}
			fm, err := managedfields.NewDefaultCRDFieldManager(typeConverter, safe, def, c, kind, gv, "status",
				fieldpath.NewExcludeFilterSetMap(st.Status.GetResetFields()))
			if err != nil {
				return nil, err
			}
			custom.FieldManagers["status"] = fm
		}
		if st.Scale != nil {
			res.Subresources["scale"] = apiserver.Subresource{Kind: autoscalingv1.SchemeGroupVersion.WithKind("Scale"), Storage: scaleStore{st.Scale}}
		}
		out.byVersion[v.Name] = res
	}
	if out.storage == nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s has no storage version", crd.Name)
	}
	return out, nil
}

// schemasOf are crd's structural schemas (defaults pruned where they
// would be pruned themselves) and its internal schemas, by version.
func schemasOf(crd *apiextensionsv1.CustomResourceDefinition) (schemas, map[string]*apiextensions.JSONSchemaProps, error) {
	sch := schemas{byVersion: map[string]*structuralschema.Structural{},
		gk: schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Status.AcceptedNames.Kind}, preserveUnknown: crd.Spec.PreserveUnknownFields}
	internalSchemas := map[string]*apiextensions.JSONSchemaProps{}
	for _, v := range crd.Spec.Versions {
		val, err := apihelpers.GetSchemaForVersion(crd, v.Name)
		if err != nil || val == nil {
			continue
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return sch, nil, fmt.Errorf("converting the schema of %s %s: %w", crd.Name, v.Name, err)
		}
		internalSchemas[v.Name] = internal.OpenAPIV3Schema
		st, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			if !crd.Spec.PreserveUnknownFields {
				return sch, nil, fmt.Errorf("the schema of %s %s is not structural: %w", crd.Name, v.Name, err)
			}
			continue
		}
		if !crd.Spec.PreserveUnknownFields {
			st = st.DeepCopy()
			if err := structuraldefaulting.PruneDefaults(st); err != nil {
				return sch, nil, fmt.Errorf("pruning the defaults of %s %s: %w", crd.Name, v.Name, err)
			}
		}
		sch.byVersion[v.Name] = st
	}
	return sch, internalSchemas, nil
}

// deprecationWarning is upstream's default warning for a deprecated
// version: the newest served version that is not deprecated, if any, is
// named as the one to use.
func deprecationWarning(deprecated string, spec apiextensionsv1.CustomResourceDefinitionSpec) string {
	msg := fmt.Sprintf("%s/%s %s is deprecated", spec.Group, deprecated, spec.Names.Kind)
	best := ""
	for _, v := range spec.Versions {
		if v.Served && !v.Deprecated && version.CompareKubeAwareVersionStrings(deprecated, v.Name) < 0 &&
			(best == "" || version.CompareKubeAwareVersionStrings(v.Name, best) > 0) {
			best = v.Name
		}
	}
	if best != "" {
		msg += fmt.Sprintf("; use %s/%s %s", spec.Group, best, spec.Names.Kind)
	}
	return msg
}

// close stops the watch caches of every store.
func (s *served) close() {
	for _, d := range s.destroy {
		if d != nil {
			d()
		}
	}
}

// columnsFor are a version's printer columns, or upstream's default (Age).
func columnsFor(v apiextensionsv1.CustomResourceDefinitionVersion) []apiextensionsv1.CustomResourceColumnDefinition {
	if len(v.AdditionalPrinterColumns) > 0 {
		return v.AdditionalPrinterColumns
	}
	return []apiextensionsv1.CustomResourceColumnDefinition{{
		Name: "Age", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp",
	}}
}

// typeConverter builds the structured-merge-diff types of crd's versions
// for managed fields and server-side apply, from the OpenAPI v3 models of
// its versions and the metadata models of the static documents.
func (s *Serving) typeConverter(crd *apiextensionsv1.CustomResourceDefinition) (managedfields.TypeConverter, error) {
	if len(s.metaModels) == 0 {
		return managedfields.NewDeducedTypeConverter(), nil
	}
	specs := []*spec3.OpenAPI{{Version: "3.0.0", Info: &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes CRD Swagger", Version: "v0.1.0"}},
		Components: &spec3.Components{Schemas: s.metaModels}}}
	for _, v := range crd.Spec.Versions {
		o, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, err
		}
		specs = append(specs, o)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, err
	}
	return managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
}

// noConversion converts nothing: decoded custom objects keep the
// version of the request body (the handler refuses a mismatch), as
// upstream's decoders.
type noConversion struct{}

func (noConversion) Convert(in, out, _ any) error {
	i, ok1 := in.(runtime.Unstructured)
	o, ok2 := out.(runtime.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	o.SetUnstructuredContent(i.UnstructuredContent())
	return nil
}

func (noConversion) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}

func (noConversion) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// store is a version's custom resource store that refuses creates while
// its CRD is terminating, as upstream's admission does.
type store struct {
	*customresource.REST
	crds *Serving
	name string
}

// Create implements rest.Creater.
func (s *store) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	if crd, err := s.crds.lister.Get(s.name); err == nil && terminating(crd) {
		name := ""
		if m, err := meta.Accessor(obj); err == nil {
			name = m.GetName()
		}
		return nil, apierrors.NewForbidden(s.DefaultQualifiedResource, name, fmt.Errorf("create not allowed while custom resource definition is terminating"))
	}
	return s.REST.Create(ctx, obj, validate, opts)
}

// terminating reports whether crd is being deleted.
func terminating(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return !crd.DeletionTimestamp.IsZero() || apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating)
}

// statusStore and scaleStore complete upstream's subresource stores as
// rest.Storage (their main store owns the watch cache).
type statusStore struct{ *customresource.StatusREST }

func (statusStore) Destroy() {}

type scaleStore struct{ *customresource.ScaleREST }

func (scaleStore) Destroy() {}
