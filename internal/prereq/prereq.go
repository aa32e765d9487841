// Package prereq is how tests treat a missing prerequisite (root, a binary,
// kubectl): under CI=true it fails the test, elsewhere it skips it, so a
// prerequisite missing in CI never passes silently.
package prereq

import (
	"fmt"
	"os"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing fails tb under CI=true and skips it otherwise, with the message.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		tb.Fatalf("prerequisite missing under CI=true: %s", msg)
	} else {
		tb.Skip(msg)
	}
}
