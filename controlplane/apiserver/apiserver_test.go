package apiserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestErrorToStatus(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	cases := []struct {
		err  error
		code int32
	}{
		{apierrors.NewNotFound(gr, "x"), 404},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), 409},
		{apierrors.NewBadRequest("bad"), 400},
		{errors.New("plain"), 500},
		{apierrors.NewUnauthorized("no"), 401},
	}
	for _, c := range cases {
		if s := errorToStatus(c.err); s.Code != c.code || s.Status != "Failure" || s.Message == "" {
			t.Errorf("%v: status %+v, want code %d", c.err, s, c.code)
		}
	}
}

func TestFieldValidationParameter(t *testing.T) {
	for q, want := range map[string]string{"": "Warn", "?fieldValidation=Strict": "Strict", "?fieldValidation=Ignore": "Ignore"} {
		got, err := fieldValidation(httptest.NewRequest(http.MethodPost, "/api/v1/pods"+q, nil))
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", q, got, err, want)
		}
	}
	if _, err := fieldValidation(httptest.NewRequest(http.MethodPost, "/x?fieldValidation=strict", nil)); !apierrors.IsBadRequest(err) {
		t.Errorf("lower-case strict: %v, want 400", err)
	}
}

func TestCheckDryRun(t *testing.T) {
	if checkDryRun(nil) != nil || checkDryRun([]string{"All"}) != nil {
		t.Fatal("valid dryRun refused")
	}
	if err := checkDryRun([]string{"Some"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("dryRun=Some: %v, want 400", err)
	}
}

func TestRestrictions(t *testing.T) {
	r := restrictions{}
	table := &schema.GroupVersionKind{Group: "meta.k8s.io", Version: "v1", Kind: "Table"}
	if !r.AllowsMediaTypeTransform("application", "json", table) || r.AllowsMediaTypeTransform("application", "vnd.kubernetes.protobuf", table) {
		t.Fatal("Table must be offered in JSON only")
	}
	if r.AllowsMediaTypeTransform("application", "json", &schema.GroupVersionKind{Group: "meta.k8s.io", Version: "v1", Kind: "Pod"}) {
		t.Fatal("unknown transformation allowed")
	}
	if !r.AllowsMediaTypeTransform("application", "json", nil) {
		t.Fatal("plain media type refused")
	}
}

func TestWarningRecorder(t *testing.T) {
	w := &warningRecorder{}
	w.AddWarning("", `unknown field "spec.x"`)
	w.AddWarning("", `unknown field "spec.x"`)
	w.AddWarning("", "")
	got := w.list()
	if len(got) != 1 || got[0] != `299 - "unknown field \"spec.x\""` {
		t.Fatalf("warnings %q", got)
	}
}
