package probes

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/internal/errdefs"
)

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}, {Name: "81", ContainerPort: 8181}}}
	tests := []struct {
		name    string
		port    intstr.IntOrString
		want    int
		wantErr bool
	}{
		{"number", intstr.FromInt32(80), 80, false},
		{"name", intstr.FromString("metrics"), 9090, false},
		{"a name that looks like a number wins", intstr.FromString("81"), 8181, false},
		{"number as a string", intstr.FromString("8443"), 8443, false},
		{"unknown name", intstr.FromString("grpc"), 0, true},
		{"zero", intstr.FromInt32(0), 0, true},
		{"too big", intstr.FromInt32(65536), 0, true},
		{"negative string", intstr.FromString("-1"), 0, true},
		{"max", intstr.FromInt32(65535), 65535, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePort(tt.port, c)
			if tt.wantErr {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want ErrInvalidArgument", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d %v, want %d", got, err, tt.want)
			}
		})
	}
}
