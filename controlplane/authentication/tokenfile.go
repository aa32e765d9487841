package authentication

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"berth/internal/errdefs"
)

// StaticTokens authenticates the bearer tokens of a static token file.
type StaticTokens struct {
	entries []staticToken
}

type staticToken struct {
	token string
	user  *user.DefaultInfo
}

var _ authenticator.Token = (*StaticTokens)(nil)

// LoadTokenFile reads a static token file in kube-apiserver's
// --token-auth-file format: one CSV record per line,
// token,user,uid[,"group1,group2,..."]. Token, user and uid are required;
// a token listed twice is an error.
func LoadTokenFile(path string) (*StaticTokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token auth file: %w", err)
	}
	defer f.Close()
	return ParseTokenFile(path, f)
}

// ParseTokenFile parses a static token file's content; name is used in
// error messages.
func ParseTokenFile(name string, r io.Reader) (*StaticTokens, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	out := &StaticTokens{}
	seen := map[string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("token auth file %s: %w: %w", name, err, errdefs.ErrInvalidArgument)
		}
		bad := func(what string) error {
			return fmt.Errorf("token auth file %s line %d: %s: %w", name, line, what, errdefs.ErrInvalidArgument)
		}
		if len(rec) < 3 || len(rec) > 4 {
			return nil, bad(fmt.Sprintf("want token,user,uid[,\"groups\"], got %d fields", len(rec)))
		}
		for i, field := range []string{"token", "user", "uid"} {
			if strings.TrimSpace(rec[i]) == "" {
				return nil, bad(field + " is empty")
			}
		}
		if prev, dup := seen[rec[0]]; dup {
			return nil, bad(fmt.Sprintf("token already listed on line %d", prev))
		}
		seen[rec[0]] = line
		u := &user.DefaultInfo{Name: rec[1], UID: rec[2]}
		if len(rec) == 4 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		out.entries = append(out.entries, staticToken{token: rec[0], user: u})
	}
	return out, nil
}

// AuthenticateToken implements authenticator.Token; unknown tokens get no
// opinion. Tokens are compared in constant time.
func (s *StaticTokens) AuthenticateToken(_ context.Context, token string) (*authenticator.Response, bool, error) {
	var found *user.DefaultInfo
	for _, e := range s.entries {
		if subtle.ConstantTimeCompare([]byte(e.token), []byte(token)) == 1 {
			found = e.user
		}
	}
	if found == nil {
		return nil, false, nil
	}
	u := *found
	u.Groups = append([]string(nil), found.Groups...)
	return &authenticator.Response{User: &u}, true, nil
}
