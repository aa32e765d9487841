package base

import (
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ResetFields are the fields a strategy resets on every write (status on
// the main resource, spec on /status), reported to server-side apply so it
// does not record ownership of fields the write could not change.
type ResetFields map[fieldpath.APIVersion]*fieldpath.Set

// GetResetFields implements rest.ResetFieldsStrategy.
func (s Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return s.Reset
}

// Reset returns the reset fields for apiVersion ("v1", "apps/v1"): each
// path is dot-separated ("status", "metadata.deletionTimestamp").
func Reset(apiVersion string, paths ...string) ResetFields {
	set := fieldpath.NewSet()
	for _, p := range paths {
		parts := strings.Split(p, ".")
		elems := make([]interface{}, len(parts))
		for i, part := range parts {
			elems[i] = part
		}
		set.Insert(fieldpath.MakePathOrDie(elems...))
	}
	return ResetFields{fieldpath.APIVersion(apiVersion): set}
}
