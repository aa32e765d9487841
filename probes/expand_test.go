package probes

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestExpandCommand(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "EMPTY", Value: ""},
		{Name: "FROM_SECRET", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}},
	}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(PORT)", "8080"},
		{"--port=$(PORT)/x", "--port=8080/x"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(PORT)", "$(PORT)"},
		{"$$", "$"},
		{"a$", "a$"},
		{"$x", "$x"},
		{"$(PORT", "$(PORT"},
		{"$(EMPTY)!", "!"},
		{"$(FROM_SECRET)", ""},
		{"$(PORT)$(PORT)", "80808080"},
		{"$()", "$()"},
	}
	for _, tt := range tests {
		got := expandCommand([]string{tt.in}, env)
		if strings.Join(got, "") != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := expandCommand(nil, env); got != nil {
		t.Errorf("expand(nil) = %q, want nil", got)
	}
}
