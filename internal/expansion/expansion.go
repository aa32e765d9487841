// Package expansion expands $(VAR) references in container commands, args
// and env values with Kubernetes' rules.
package expansion

import "strings"

// Expand replaces the $(NAME) references in s with lookup's values, with
// Kubernetes' rules for command, args and env values:
//   - $(NAME) whose NAME lookup knows becomes its value;
//   - $(NAME) whose NAME lookup does not know stays as written;
//   - $$ is an escaped $: it becomes a single $ and starts no reference, so
//     $$(NAME) becomes the literal $(NAME);
//   - a $ followed by anything else, a $( never closed, and a trailing $ are
//     kept as written.
//
// Values are not expanded again.
func Expand(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// Unterminated: keep "$(" and go on after it.
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// Lookup returns a lookup over maps for Expand; the first map holding a name wins.
func Lookup(maps ...map[string]string) func(name string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}
