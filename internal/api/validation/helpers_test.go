package validation

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// want is one expected error: its type, field path and (optionally) a
// substring of its detail.
type want struct {
	typ    field.ErrorType
	field  string
	detail string
}

// checkErrors asserts errs holds exactly the wanted errors (order ignored).
func checkErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s %s", e.Type, e.Field))
	}
	exp := make([]string, 0, len(wants))
	for _, w := range wants {
		exp = append(exp, fmt.Sprintf("%s %s", w.typ, w.field))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Fatalf("errors:\n  got  %q\n  want %q\nfull: %v", got, exp, errs)
	}
	for _, w := range wants {
		if w.detail == "" {
			continue
		}
		found := false
		for _, e := range errs {
			if e.Type == w.typ && e.Field == w.field && strings.Contains(e.Detail, w.detail) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s error on %s with detail containing %q: %v", w.typ, w.field, w.detail, errs)
		}
	}
}
