package probes

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// expandCommand expands $(VAR) references in an exec probe's or hook's
// command from the container's literal env values only (no valueFrom, no
// service links), as the kubelet does: $$ is a literal $, an unknown or
// unterminated reference is kept as written.
func expandCommand(cmd []string, env []v1.EnvVar) []string {
	if len(cmd) == 0 {
		return cmd
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = expandVars(arg, vars)
	}
	return out
}

// expandVars expands one string.
func expandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		next := s[i+1]
		switch {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
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
