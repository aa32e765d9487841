package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/kubernetes"

	"berth/internal/errdefs"
)

// RESTGetter is a Getter over the apiserver's own stores (generic registry
// stores reading etcd), as kube-apiserver's authenticator reads its
// registries rather than a cache.
type RESTGetter struct {
	ServiceAccounts, Pods, Secrets, Nodes rest.Getter
}

var _ Getter = RESTGetter{}

// Validate checks every store is set.
func (g RESTGetter) Validate() error {
	if g.ServiceAccounts == nil || g.Pods == nil || g.Secrets == nil || g.Nodes == nil {
		return fmt.Errorf("serviceaccount RESTGetter: ServiceAccounts, Pods, Secrets and Nodes are required: %w", errdefs.ErrInvalidArgument)
	}
	return nil
}

func restGet[T runtime.Object](ctx context.Context, g rest.Getter, namespace, name string) (T, error) {
	var zero T
	obj, err := g.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return zero, err
	}
	out, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("store returned a %T, want %T", obj, zero)
	}
	return out, nil
}

// GetServiceAccount implements Getter.
func (g RESTGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return restGet[*corev1.ServiceAccount](ctx, g.ServiceAccounts, namespace, name)
}

// GetPod implements Getter.
func (g RESTGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return restGet[*corev1.Pod](ctx, g.Pods, namespace, name)
}

// GetSecret implements Getter.
func (g RESTGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return restGet[*corev1.Secret](ctx, g.Secrets, namespace, name)
}

// GetNode implements Getter.
func (g RESTGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return restGet[*corev1.Node](ctx, g.Nodes, "", name)
}

// ClientGetter is a Getter over an API client, for verifying tokens
// outside the apiserver (a component holding the public key).
type ClientGetter struct {
	Client kubernetes.Interface
}

var _ Getter = ClientGetter{}

// GetServiceAccount implements Getter.
func (g ClientGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return g.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetPod implements Getter.
func (g ClientGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return g.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetSecret implements Getter.
func (g ClientGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return g.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetNode implements Getter.
func (g ClientGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return g.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}
