package expansion

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{
		"VAR_A":     "A",
		"VAR_B":     "B",
		"VAR_C":     "C",
		"VAR_REF":   "$(VAR_A)",
		"VAR_EMPTY": "",
		"":          "empty-name",
	}
	tests := []struct{ in, want string }{
		{"", ""},
		{"no refs", "no refs"},
		{"$(VAR_A)", "A"},
		{"___$(VAR_B)___", "___B___"},
		{"$(VAR_A)-$(VAR_B)-$(VAR_C)", "A-B-C"},
		{"$(VAR_A)$(VAR_B)", "AB"},
		{"values are not re-expanded: $(VAR_REF)", "values are not re-expanded: $(VAR_A)"},
		{"$(VAR_EMPTY)", ""},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"x$(UNDEFINED)y$(VAR_A)", "x$(UNDEFINED)yA"},
		{"$$(VAR_A)", "$(VAR_A)"},
		{"$$$(VAR_A)", "$A"},
		{"$$$$(VAR_A)", "$$(VAR_A)"},
		{"$$", "$"},
		{"$$$", "$$"},
		{"a$$b", "a$b"},
		{"$", "$"},
		{"trailing $", "trailing $"},
		{"$x", "$x"},
		{"$VAR_A", "$VAR_A"},
		{"${VAR_A}", "${VAR_A}"},
		{"$)", "$)"},
		{"$(", "$("},
		{"$(VAR_A", "$(VAR_A"},
		{"$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"},
		{"$()", "empty-name"},
		{"$(VAR_A)$", "A$"},
		{"$(VAR_A)$(", "A$("},
		{"($(VAR_A))", "(A)"},
		{"$(VAR_A) and $$ and $(VAR_B) and $$(VAR_C)", "A and $ and B and $(VAR_C)"},
		{"ünïcode $(VAR_A) ✓", "ünïcode A ✓"},
	}
	for _, tt := range tests {
		if got := Expand(tt.in, Lookup(vars)); got != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLookupPrefersEarlierMaps(t *testing.T) {
	l := Lookup(map[string]string{"A": "first"}, map[string]string{"A": "second", "B": "b"})
	if v, _ := l("A"); v != "first" {
		t.Errorf("A = %q, want first", v)
	}
	if v, ok := l("B"); !ok || v != "b" {
		t.Errorf("B = %q, %v", v, ok)
	}
	if _, ok := l("C"); ok {
		t.Errorf("C found")
	}
}
