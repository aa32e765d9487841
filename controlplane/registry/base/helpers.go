package base

import (
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// OrNone returns s, or "<none>" when it is empty, as kubectl's printers do.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// AccessModes formats persistent volume access modes as kubectl does
// (RWO,ROX,RWX,RWOP, each once, in that order).
func AccessModes(modes []v1.PersistentVolumeAccessMode) string {
	has := map[v1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  v1.PersistentVolumeAccessMode
		short string
	}{{v1.ReadWriteOnce, "RWO"}, {v1.ReadOnlyMany, "ROX"}, {v1.ReadWriteMany, "RWX"}, {v1.ReadWriteOncePod, "RWOP"}} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// SortedKeys returns a string set's members in order.
func SortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
