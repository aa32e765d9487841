package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// PreBindPlugin runs after a node was chosen and before the pod's Binding
// is posted, in the binding goroutine (it may block, e.g. until the pod's
// volumes are bound). A non-success status fails the binding: the pod is
// forgotten from the cache and retried.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, pod *v1.Pod, nodeName string) *Status
}
