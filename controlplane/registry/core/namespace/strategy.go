// Package namespace describes core/v1 namespaces to the registry: the
// kubernetes finalizer and Active phase on create, spec and status kept
// apart, the metadata-name label, field selectors and the table (NAME
// STATUS AGE).
package namespace

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Kind describes namespaces: spec.finalizers change only through
// /finalize (served by the resource layer).
var Kind = base.Kind[*v1.Namespace]{
	APIVersion: "v1",
	Status:     true,
	NewStatus:  func(ns *v1.Namespace) { ns.Status = v1.NamespaceStatus{Phase: v1.NamespaceActive} },
	PrepareCreate: func(_ context.Context, ns *v1.Namespace) {
		if !slices.Contains(ns.Spec.Finalizers, v1.FinalizerKubernetes) {
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, v1.FinalizerKubernetes)
		}
	},
	PrepareUpdate:        func(to, from *v1.Namespace) { to.Spec.Finalizers = from.Spec.Finalizers },
	Canonicalize:         labelName,
	Validate:             validation.ValidateNamespace,
	ValidateUpdate:       validation.ValidateNamespaceUpdate,
	ValidateStatusUpdate: validation.ValidateNamespaceStatusUpdate, // the phase against the deletion timestamp
	Fields:               fieldsets.Namespace,
	Table:                table,
}

// labelName keeps the kubernetes.io/metadata.name label equal to the name.
func labelName(ns *v1.Namespace) {
	if ns.Name == "" {
		return
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[v1.LabelMetadataName] = ns.Name
}

// table prints NAME STATUS AGE.
var table = base.Table[*v1.Namespace]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn,
		base.Col("Status", "The status of the namespace"), base.AgeColumn},
	Row: func(ns *v1.Namespace, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{ns.Name, string(ns.Status.Phase), base.Age(ns.CreationTimestamp, now)}, nil
	},
}
