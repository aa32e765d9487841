package controllerrevision

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"berth/internal/api/scheme"
)

func TestValidationAndTable(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	yes := true
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-5d8f", Namespace: "default", ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "u", Controller: &yes}}},
		Revision: 2, Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)},
	}
	if errs := s.Validate(context.Background(), r); len(errs) != 0 {
		t.Fatalf("valid revision refused: %v", errs)
	}
	for _, tc := range []struct {
		data, want string
	}{
		{"", "data: Required value: data is mandatory"},
		{"[1]", "data: Required value: data must be a valid JSON object"},
		{"{", "data: Invalid value: \"<value omitted>\": error parsing data"},
	} {
		bad := r.DeepCopy()
		bad.Data.Raw = []byte(tc.data)
		if tc.data == "" {
			bad.Data.Raw = nil
		}
		if errs := s.Validate(context.Background(), bad); !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("data %q: %v, want %q", tc.data, errs, tc.want)
		}
	}
	neg := r.DeepCopy()
	neg.Revision = -1
	if errs := s.Validate(context.Background(), neg); !strings.Contains(errs.ToAggregate().Error(), "revision: Invalid value: -1: must be greater than or equal to 0") {
		t.Errorf("negative revision: %v", errs)
	}
	changed := r.DeepCopy()
	changed.Data.Raw = []byte(`{"spec":{}}`)
	if errs := s.ValidateUpdate(context.Background(), changed, r); !strings.Contains(errs.ToAggregate().Error(), "data: Invalid value") {
		t.Errorf("data change allowed: %v", errs)
	}
	out, err := Kind.Table.ConvertToTable(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := out.Rows[0].Cells; c[0] != "agent-5d8f" || c[1] != "daemonset.apps/agent" || c[2] != int64(2) {
		t.Errorf("row %v", c)
	}
	r.OwnerReferences = nil
	if out, _ := Kind.Table.ConvertToTable(context.Background(), r, nil); out.Rows[0].Cells[1] != "<none>" {
		t.Errorf("no controller: %v", out.Rows[0].Cells[1])
	}
}
