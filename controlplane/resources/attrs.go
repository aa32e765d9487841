package resources

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"

	"berth/internal/api/fieldsets"
)

// attrFunc returns the label and field sets field selectors match against,
// from berth/internal/api/fieldsets (the kinds it knows) or the metadata.
func attrFunc(gvk schema.GroupVersionKind, namespaced bool) storage.AttrFunc {
	fieldsOf := func(obj runtime.Object) fields.Set { return fieldsets.Meta(obj, namespaced) }
	for _, k := range fieldsets.Kinds() {
		if k.GVK == gvk {
			fieldsOf = k.Fields
		}
	}
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("field selector attributes of %T: %w", obj, err)
		}
		return labels.Set(m.GetLabels()), fieldsOf(obj), nil
	}
}
