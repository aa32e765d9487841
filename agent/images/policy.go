// Package images makes sure a container's image is on the node before the
// container is created, as the kubelet's image manager does: the pull policy
// (Always, IfNotPresent, Never; defaulted from the tag), pulls through the
// CRI image service trying the pod's credentials in order, a per-pod,
// per-image exponential back-off after failed pulls (10 s doubling to 5 min),
// upstream's waiting reasons (ErrImagePull, ImagePullBackOff,
// ErrImageNeverPull, InvalidImageName, …) and messages carrying the runtime's
// error, and the events the kubelet would record, returned as values.
package images

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

// splitReference validates an image reference and returns its tag and digest
// (either may be empty).
func splitReference(image string) (tag, digest string, err error) {
	if image == "" || strings.TrimSpace(image) != image {
		return "", "", fmt.Errorf("image reference %q: %w", image, errdefs.ErrInvalidArgument)
	}
	if _, err := name.ParseReference(image); err != nil {
		return "", "", fmt.Errorf("image reference %q: %v: %w", image, err, errdefs.ErrInvalidArgument)
	}
	base := image
	if i := strings.LastIndex(image, "@"); i >= 0 {
		base, digest = image[:i], image[i+1:]
	}
	if i := strings.LastIndex(base, ":"); i > strings.LastIndex(base, "/") {
		tag = base[i+1:]
	}
	return tag, digest, nil
}

// DefaultPullPolicy is the pull policy the API server gives a container
// without one: Always for the tag "latest" — also implied by a reference with
// neither tag nor digest — and IfNotPresent otherwise (other tags, digests,
// and references that do not parse, which the pull then reports).
func DefaultPullPolicy(image string) v1.PullPolicy {
	tag, digest, err := splitReference(image)
	if err == nil && (tag == "latest" || (tag == "" && digest == "")) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// WithDefaultTag returns the reference the runtime is asked for: the image
// with ":latest" appended when it has neither tag nor digest (busybox →
// busybox:latest), without qualifying the name further.
func WithDefaultTag(image string) (string, error) {
	tag, digest, err := splitReference(image)
	if err != nil {
		return "", err
	}
	if tag == "" && digest == "" {
		return image + ":latest", nil
	}
	return image, nil
}
