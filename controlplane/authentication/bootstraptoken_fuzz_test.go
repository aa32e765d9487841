package authentication

import (
	"errors"
	"testing"

	"berth/internal/errdefs"
)

// FuzzParseBootstrapToken: an accepted token is exactly "<id>.<secret>"
// of 6 and 16 characters of [a-z0-9]; a refused one wraps
// errdefs.ErrInvalidArgument and never quotes the token.
func FuzzParseBootstrapToken(f *testing.F) {
	for _, s := range []string{
		"abcdef.0123456789abcdef",
		"abcdef.0123456789abcdeF",
		"abcde.0123456789abcdef",
		"abcdef0123456789abcdef",
		"abcdef.0123456789abcdef\n",
		"abcdef..123456789abcdef",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		id, secret, err := ParseBootstrapToken(token)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("ParseBootstrapToken(%q): %v does not wrap ErrInvalidArgument", token, err)
			}
			return
		}
		if id+"."+secret != token {
			t.Fatalf("ParseBootstrapToken(%q) = %q, %q: does not re-form the token", token, id, secret)
		}
		if len(id) != 6 || len(secret) != 16 {
			t.Fatalf("ParseBootstrapToken(%q) = %q, %q: want 6 and 16 characters", token, id, secret)
		}
		for _, c := range id + secret {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
				t.Fatalf("ParseBootstrapToken(%q): accepted %q", token, c)
			}
		}
	})
}
