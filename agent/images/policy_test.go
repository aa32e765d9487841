package images

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  v1.PullPolicy
	}{
		{"busybox", v1.PullAlways},
		{"busybox:latest", v1.PullAlways},
		{"busybox:1.36", v1.PullIfNotPresent},
		{"docker.io/library/busybox", v1.PullAlways},
		{"127.0.0.1:5000/busybox", v1.PullAlways},
		{"127.0.0.1:5000/busybox:v1", v1.PullIfNotPresent},
		{"127.0.0.1:5000/team/app:latest", v1.PullAlways},
		{"busybox@" + digest, v1.PullIfNotPresent},
		{"busybox:1.36@" + digest, v1.PullIfNotPresent},
		{"busybox:latest@" + digest, v1.PullAlways},
		{"Busybox", v1.PullIfNotPresent}, // does not parse: upstream's defaulting ignores the error
	}
	for _, tt := range tests {
		if got := DefaultPullPolicy(tt.image); got != tt.want {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}

func TestWithDefaultTag(t *testing.T) {
	tests := []struct{ image, want string }{
		{"busybox", "busybox:latest"},
		{"busybox:1.36", "busybox:1.36"},
		{"localhost:5000/busybox", "localhost:5000/busybox:latest"},
		{"localhost:5000/busybox:v2", "localhost:5000/busybox:v2"},
		{"busybox@" + digest, "busybox@" + digest},
		{"busybox:1.36@" + digest, "busybox:1.36@" + digest},
	}
	for _, tt := range tests {
		got, err := WithDefaultTag(tt.image)
		if err != nil || got != tt.want {
			t.Errorf("WithDefaultTag(%q) = %q, %v; want %q", tt.image, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "Busybox", "busybox:", "busybox@sha256:short", " busybox", "bus box", "busybox:bad/tag"} {
		if _, err := WithDefaultTag(bad); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "image reference") {
			t.Errorf("WithDefaultTag(%q) err = %v, want invalid argument", bad, err)
		}
	}
}
