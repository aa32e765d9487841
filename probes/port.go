package probes

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/internal/errdefs"
)

// ResolvePort turns a probe's or hook's port into a number: an integer is
// taken as is; a string names one of the container's ports, or failing that
// is parsed as a number, as the kubelet does. The result must be in 1..65535.
func ResolvePort(port intstr.IntOrString, container *v1.Container) (int, error) {
	var n int
	switch port.Type {
	case intstr.Int:
		n = int(port.IntVal)
	case intstr.String:
		found := false
		if container != nil {
			for _, p := range container.Ports {
				if p.Name == port.StrVal {
					n, found = int(p.ContainerPort), true
					break
				}
			}
		}
		if !found {
			v, err := strconv.Atoi(port.StrVal)
			if err != nil {
				return 0, fmt.Errorf("port %q: no container port has that name and it is not a number: %w", port.StrVal, errdefs.ErrInvalidArgument)
			}
			n = v
		}
	default:
		return 0, fmt.Errorf("port %+v: neither a number nor a name: %w", port, errdefs.ErrInvalidArgument)
	}
	if n <= 0 || n >= 65536 {
		return 0, fmt.Errorf("invalid port number: %d: %w", n, errdefs.ErrInvalidArgument)
	}
	return n, nil
}
