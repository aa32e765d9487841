package admission

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/internal/errdefs"
)

// NodeWatch keeps the agent's own Node from an informer (on its name only),
// as the kubelet's node lister; until the informer has it, Get returns the
// Node the agent would register (the kubelet's getNodeAnyWay).
type NodeWatch struct {
	name     string
	factory  informers.SharedInformerFactory
	lister   corelisters.NodeLister
	fallback func() (*v1.Node, error)
}

// WatchNode returns a watch of client's Node name, falling back to
// fallback; Run starts it.
func WatchNode(client kubernetes.Interface, name string, fallback func() (*v1.Node, error)) (*NodeWatch, error) {
	if client == nil || name == "" || fallback == nil {
		return nil, fmt.Errorf("admission: a client, a node name and a fallback are required: %w", errdefs.ErrInvalidArgument)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
	}))
	return &NodeWatch{name: name, factory: factory, lister: factory.Core().V1().Nodes().Lister(), fallback: fallback}, nil
}

// Run watches the Node until ctx ends.
func (w *NodeWatch) Run(ctx context.Context) error {
	w.factory.Start(ctx.Done())
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}

// Get returns the Node as last watched, or the fallback's.
func (w *NodeWatch) Get() (*v1.Node, error) {
	if n, err := w.lister.Get(w.name); err == nil {
		return n, nil
	}
	return w.fallback()
}
