// Package runtimeclass describes node.k8s.io/v1 RuntimeClasses to the
// registry (cluster-scoped; the handler is immutable; a PUT may
// create one, as upstream) and their table (NAME HANDLER AGE).
package runtimeclass

import (
	"time"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes runtimeclasses.
var Kind = base.Kind[*nodev1.RuntimeClass]{
	CreateOnUpdate: true, ConditionalUpdate: true, // an update names the resourceVersion it replaces
	Validate:       validation.ValidateRuntimeClass,
	ValidateUpdate: validation.ValidateRuntimeClassUpdate,
	// warnings about deprecated node labels in the scheduling
	Warnings:       validation.WarningsForRuntimeClass,
	UpdateWarnings: func(rc, _ *nodev1.RuntimeClass) []string { return validation.WarningsForRuntimeClass(rc) },
	Table:          table,
}

// table prints NAME HANDLER AGE.
var table = base.Table[*nodev1.RuntimeClass]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.Col("Handler", nodev1.RuntimeClass{}.SwaggerDoc()["handler"]), base.AgeColumn},
	Row: func(rc *nodev1.RuntimeClass, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{rc.Name, rc.Handler, base.Age(rc.CreationTimestamp, now)}, nil
	},
}
