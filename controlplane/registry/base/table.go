package base

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Table prints objects of type T as server-side table rows, the way
// kube-apiserver's printers do: every column is always filled, and columns
// with Priority 1 are the ones kubectl shows only with -o wide.
type Table[T runtime.Object] struct {
	// Columns are the column definitions, in cell order.
	Columns []metav1.TableColumnDefinition
	// Row returns one row's cells (one per column) and its conditions.
	Row func(obj T, now time.Time) ([]interface{}, []metav1.TableRowCondition)
	// Now is the clock used for AGE-style columns; time.Now when nil.
	Now func() time.Time
}

// ConvertToTable implements rest.TableConvertor for a single T or a list of T.
func (t Table[T]) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := time.Now()
	if t.Now != nil {
		now = t.Now()
	}
	table := &metav1.Table{ColumnDefinitions: t.Columns}
	addRow := func(obj runtime.Object) error {
		typed, ok := obj.(T)
		if !ok {
			return fmt.Errorf("cannot print %T in this table", obj)
		}
		cells, conds := t.Row(typed, now)
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Conditions: conds, Object: runtime.RawExtension{Object: obj}})
		return nil
	}
	if meta.IsListType(object) {
		if err := meta.EachListItem(object, addRow); err != nil {
			return nil, err
		}
		if l, err := meta.ListAccessor(object); err == nil {
			table.ResourceVersion = l.GetResourceVersion()
			table.Continue = l.GetContinue()
			table.RemainingItemCount = l.GetRemainingItemCount()
		}
	} else {
		if err := addRow(object); err != nil {
			return nil, err
		}
		if m, err := meta.Accessor(object); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
	}
	if opts, ok := tableOptions.(*metav1.TableOptions); ok && opts != nil && opts.NoHeaders {
		table.ColumnDefinitions = nil
	}
	return table, nil
}

// Age formats the time since ts as kubectl's AGE column does ("<unknown>"
// for a zero time).
func Age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// MicroAge is Age for a MicroTime.
func MicroAge(ts metav1.MicroTime, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// Column definition helpers with upstream's types and descriptions.
var (
	// NameColumn is the NAME column.
	NameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	// AgeColumn is the AGE column.
	AgeColumn = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

// Col is a string column.
func Col(name, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string", Description: description}
}

// IntCol is an integer column.
func IntCol(name, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "integer", Description: description}
}

// Wide marks a column as shown only with -o wide.
func Wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition {
	c.Priority = 1
	return c
}

// CreatedAtColumn is the CREATED AT column RBAC roles print.
var CreatedAtColumn = metav1.TableColumnDefinition{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}

// CreatedAt formats a creation time as the CREATED AT column does (RFC 3339, UTC).
func CreatedAt(ts metav1.Time) string {
	return ts.UTC().Format(time.RFC3339)
}
