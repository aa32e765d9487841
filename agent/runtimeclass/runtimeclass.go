// Package runtimeclass resolves a pod's spec.runtimeClassName to the CRI
// runtime handler its sandbox runs with, from the node.k8s.io/v1
// RuntimeClasses the agent watches (an informer), as upstream's kubelet
// does. A pod naming a class that does not exist cannot have a sandbox.
package runtimeclass

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	nodelisters "k8s.io/client-go/listers/node/v1"

	"berth/internal/errdefs"
)

// Manager looks RuntimeClasses up in its informer's cache.
type Manager struct {
	factory informers.SharedInformerFactory
	lister  nodelisters.RuntimeClassLister
}

// New returns a manager watching client's RuntimeClasses; Run starts it.
func New(client kubernetes.Interface) (*Manager, error) {
	if client == nil {
		return nil, fmt.Errorf("runtimeclass: client is required: %w", errdefs.ErrInvalidArgument)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	return &Manager{factory: factory, lister: factory.Node().V1().RuntimeClasses().Lister()}, nil
}

// Run watches RuntimeClasses until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	m.factory.Start(ctx.Done())
	<-ctx.Done()
	m.factory.Shutdown()
	return nil
}

// Handler returns the runtime handler of pod's RuntimeClass: empty (the
// runtime's default) when the pod names none. A class that does not exist
// is the API's NotFound error (`runtimeclass.node.k8s.io "NAME" not
// found`, upstream's sandbox failure message).
func (m *Manager) Handler(pod *v1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return "", nil
	}
	rc, err := m.lister.Get(*name)
	switch {
	case apierrors.IsNotFound(err):
		return "", err
	case err != nil:
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", *name, err)
	}
	return rc.Handler, nil
}
