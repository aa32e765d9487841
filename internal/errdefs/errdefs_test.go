package errdefs

import (
	"errors"
	"fmt"
	"testing"
)

func TestWrappedClassesAreRecognised(t *testing.T) {
	err := fmt.Errorf("container %q: %w", "abc", ErrNotFound)
	if !IsNotFound(err) {
		t.Fatalf("IsNotFound(%v) = false, want true", err)
	}
	if errors.Is(err, ErrConflict) {
		t.Fatalf("errors.Is(%v, ErrConflict) = true, want false", err)
	}
}
