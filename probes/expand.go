package probes

import (
	v1 "k8s.io/api/core/v1"

	"berth/internal/expansion"
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
	lookup := expansion.Lookup(vars)
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = expansion.Expand(arg, lookup)
	}
	return out
}
