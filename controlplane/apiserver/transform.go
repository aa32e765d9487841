package apiserver

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// transform turns an object or list into the representation the client
// asked for with Accept's as=: a Table, PartialObjectMetadata or
// PartialObjectMetadataList.
func (h *Handler) transform(r *http.Request, res *Resource, target *schema.GroupVersionKind, obj runtime.Object, isList bool) (runtime.Object, error) {
	obj = unwrapCacheable(obj)
	switch target.Kind {
	case "Table":
		return h.table(r, res, obj)
	case "PartialObjectMetadata":
		if isList {
			return nil, negotiation.NewNotAcceptableConversionError("PartialObjectMetadata: the requested object is a list", []string{"PartialObjectMetadataList", "Table"})
		}
		return partialMetadata(obj)
	case "PartialObjectMetadataList":
		if !isList {
			return nil, negotiation.NewNotAcceptableConversionError("PartialObjectMetadataList: the requested object is not a list", []string{"PartialObjectMetadata", "Table"})
		}
		out := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: metaV1.String(), Kind: "PartialObjectMetadataList"}}
		if lm, err := meta.ListAccessor(obj); err == nil {
			out.ResourceVersion, out.Continue, out.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		}
		err := meta.EachListItem(obj, func(item runtime.Object) error {
			m, err := partialMetadata(item)
			if err != nil {
				return err
			}
			m.TypeMeta = metav1.TypeMeta{}
			out.Items = append(out.Items, *m)
			return nil
		})
		return out, err
	}
	return nil, negotiation.NewNotAcceptableConversionError(target.String(), []string{"Table", "PartialObjectMetadata", "PartialObjectMetadataList"})
}

func partialMetadata(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	obj = unwrapCacheable(obj)
	out := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: metaV1.String(), Kind: "PartialObjectMetadata"}}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// Custom objects: their metadata map, decoded.
		m, _ := u.Object["metadata"].(map[string]any)
		if m == nil {
			return out, nil
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &out.ObjectMeta); err != nil {
			return nil, fmt.Errorf("%s has malformed metadata: %w", u.GetKind(), err)
		}
		return out, nil
	}
	a, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	om, ok := a.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	out.ObjectMeta = *om.DeepCopy()
	return out, nil
}

// table converts with the resource's TableConvertor and embeds each row's
// object as includeObject says (None, Metadata (default) or Object).
func (h *Handler) table(r *http.Request, res *Resource, obj runtime.Object) (*metav1.Table, error) {
	opts := &metav1.TableOptions{}
	if err := decodeParams(r.URL.Query(), opts); err != nil {
		return nil, err
	}
	switch opts.IncludeObject {
	case "":
		opts.IncludeObject = metav1.IncludeMetadata
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("includeObject: unsupported value %q (want None, Metadata or Object)", opts.IncludeObject))
	}
	table, err := res.Store.ConvertToTable(r.Context(), unwrapCacheable(obj), opts)
	if err != nil {
		return nil, err
	}
	table.TypeMeta = metav1.TypeMeta{APIVersion: metaV1.String(), Kind: "Table"}
	for i := range table.Rows {
		row := &table.Rows[i]
		switch opts.IncludeObject {
		case metav1.IncludeNone:
			row.Object = runtime.RawExtension{}
		case metav1.IncludeMetadata:
			if row.Object.Object == nil {
				continue
			}
			m, err := partialMetadata(row.Object.Object)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Object: m}
		case metav1.IncludeObject:
			if row.Object.Object == nil {
				continue
			}
			item := unwrapCacheable(row.Object.Object)
			gvk := res.GroupVersionKind()
			withKind := item.DeepCopyObject()
			withKind.GetObjectKind().SetGroupVersionKind(gvk)
			row.Object = runtime.RawExtension{Object: withKind}
		}
	}
	return table, nil
}

// unwrapCacheable returns the object inside a watch cache wrapper.
func unwrapCacheable(obj runtime.Object) runtime.Object {
	if c, ok := obj.(runtime.CacheableObject); ok {
		return c.GetObject()
	}
	return obj
}
