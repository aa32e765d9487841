package prereq

import (
	"testing"
)

// recorder captures what Missing does to a test.
type recorder struct {
	testing.TB
	fatal, skipped string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = format }
func (r *recorder) Skip(args ...any)                  { r.skipped = "skip" }

func TestMissingFailsInCIAndSkipsElsewhere(t *testing.T) {
	t.Setenv("CI", "true")
	r := &recorder{}
	Missing(r, "kubectl at %s", "/x")
	if r.fatal == "" || r.skipped != "" {
		t.Fatalf("under CI=true: fatal=%q skipped=%q, want a failure and no skip", r.fatal, r.skipped)
	}
	t.Setenv("CI", "")
	r = &recorder{}
	Missing(r, "kubectl at %s", "/x")
	if r.fatal != "" || r.skipped == "" {
		t.Fatalf("outside CI: fatal=%q skipped=%q, want a skip and no failure", r.fatal, r.skipped)
	}
}
