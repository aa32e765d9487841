package base

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var testTable = Table[*v1.ConfigMap]{
	Columns: []metav1.TableColumnDefinition{NameColumn, AgeColumn},
	Row: func(cm *v1.ConfigMap, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{cm.Name, Age(cm.CreationTimestamp, now)}, nil
	},
	Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
}

func TestTableRejectsOtherTypes(t *testing.T) {
	if _, err := testTable.ConvertToTable(context.Background(), &v1.Secret{}, nil); err == nil {
		t.Fatal("a configmap table printed a secret")
	}
}

func TestTableListAndAge(t *testing.T) {
	created := metav1.Time{Time: time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC)}
	list := &v1.ConfigMapList{Items: []v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: created}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}
	out, err := testTable.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) != 2 || out.Rows[0].Cells[1] != "60m" || out.Rows[1].Cells[1] != "<unknown>" {
		t.Fatalf("rows = %+v", out.Rows)
	}
	empty, err := testTable.ConvertToTable(context.Background(), &v1.ConfigMapList{}, nil)
	if err != nil || len(empty.Rows) != 0 || len(empty.ColumnDefinitions) != 2 {
		t.Fatalf("empty list table = %+v, %v", empty, err)
	}
}

func TestHelpers(t *testing.T) {
	if got := AccessModes([]v1.PersistentVolumeAccessMode{v1.ReadWriteMany, v1.ReadWriteOnce, v1.ReadWriteOnce}); got != "RWO,RWX" {
		t.Errorf("AccessModes = %q", got)
	}
	if got := Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}}); got != "a=1,b=2" {
		t.Errorf("Selector = %q", got)
	}
	if got := Selector(&metav1.LabelSelector{}); got != "<none>" {
		t.Errorf("Selector(everything) = %q", got)
	}
	if got := CreatedAt(metav1.Time{Time: time.Date(2026, 2, 3, 4, 5, 6, 0, time.FixedZone("x", 3600))}); got != "2026-02-03T03:05:06Z" {
		t.Errorf("CreatedAt = %q", got)
	}
}
