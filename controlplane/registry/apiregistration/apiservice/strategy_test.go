package apiservice

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"berth/internal/api/scheme"
)

func remote() *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com", ResourceVersion: "1"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "wardle.example.com", Version: "v1alpha1",
			Service:              &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "api", Port: ptr.To[int32](443)},
			GroupPriorityMinimum: 2000, VersionPriority: 200},
	}
}

// TestValidateUpstreamWording: kube-aggregator's validation, field paths
// and messages as upstream.
func TestValidateUpstreamWording(t *testing.T) {
	s := NewStrategy(scheme.New())
	for _, tc := range []struct {
		name   string
		change func(*apiregistrationv1.APIService)
		want   string
	}{
		{"valid", func(*apiregistrationv1.APIService) {}, ""},
		{"name not VERSION.GROUP", func(a *apiregistrationv1.APIService) { a.Name = "wardle" },
			`metadata.name: Invalid value: "wardle": must be ` + "`spec.version+\".\"+spec.group`"},
		{"group priority", func(a *apiregistrationv1.APIService) { a.Spec.GroupPriorityMinimum = 0 },
			"spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"},
		{"version priority", func(a *apiregistrationv1.APIService) { a.Spec.VersionPriority = 1001 },
			"spec.versionPriority: Invalid value: 1001: must be positive and less than 1000"},
		{"service without name", func(a *apiregistrationv1.APIService) { a.Spec.Service.Name = "" }, "spec.service.name: Required value"},
		{"caBundle and insecure", func(a *apiregistrationv1.APIService) {
			a.Spec.CABundle, a.Spec.InsecureSkipTLSVerify = []byte("x"), true
		}, "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"},
		{"local with caBundle", func(a *apiregistrationv1.APIService) { a.Spec.Service, a.Spec.CABundle = nil, []byte("x") },
			"spec.caBundle: Invalid value: \"1 bytes\": local APIServices may not have a caBundle"},
	} {
		obj := remote()
		tc.change(obj)
		errs := s.Validate(context.Background(), obj)
		if got := errs.ToAggregate(); (got == nil) != (tc.want == "") || (got != nil && !strings.Contains(got.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, got, tc.want)
		}
	}
}

// TestStatusOnlyThroughStatus: create clears the status (a local
// APIService is Available at once), updates keep it, /status keeps the
// spec.
func TestStatusOnlyThroughStatus(t *testing.T) {
	s, st := NewStrategy(scheme.New()), NewStatusStrategy(scheme.New())
	obj := remote()
	obj.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue}}
	s.PrepareForCreate(context.Background(), obj)
	if len(obj.Status.Conditions) != 0 {
		t.Fatalf("create kept the status: %+v", obj.Status)
	}
	local := remote()
	local.Spec.Service = nil
	s.PrepareForCreate(context.Background(), local)
	if c := local.Status.Conditions; len(c) != 1 || c[0].Status != apiregistrationv1.ConditionTrue || c[0].Reason != "Local" {
		t.Fatalf("a local APIService's status at create: %+v", c)
	}
	newer := remote()
	newer.Spec.VersionPriority = 5
	newer.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse}}
	st.PrepareForUpdate(context.Background(), newer, remote())
	if newer.Spec.VersionPriority != 200 || len(newer.Status.Conditions) != 1 {
		t.Fatalf("/status update: spec %+v status %+v", newer.Spec, newer.Status)
	}
	newer.Status.Conditions[0].Status = "Maybe"
	if errs := st.ValidateUpdate(context.Background(), newer, remote()); len(errs) != 1 ||
		!strings.Contains(errs[0].Error(), `status.conditions[0].status: Unsupported value: "Maybe"`) {
		t.Fatalf("status Maybe: %v", errs)
	}
}

func TestTable(t *testing.T) {
	local := remote()
	local.Spec.Service = nil
	local.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, Reason: "Local"}}
	down := remote()
	down.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse, Reason: "ServiceNotFound"}}
	Kind.Table.Now = func() time.Time { return time.Time{} }
	for obj, want := range map[*apiregistrationv1.APIService][]interface{}{
		local:    {"v1alpha1.wardle.example.com", "Local", "True"},
		down:     {"v1alpha1.wardle.example.com", "ns/api", "False (ServiceNotFound)"},
		remote(): {"v1alpha1.wardle.example.com", "ns/api", "Unknown"},
	} {
		tbl, err := Kind.Table.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cells := tbl.Rows[0].Cells; cells[0] != want[0] || cells[1] != want[1] || cells[2] != want[2] {
			t.Errorf("row %v, want %v", cells, want)
		}
	}
}
