package volumes

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth/internal/errdefs"
)

// ClientSource reads configMaps and secrets and requests service account
// tokens through the Kubernetes API: it is both an ObjectSource and a
// TokenGetter. API errors are classified with errdefs (NotFound →
// ErrNotFound, …), the server's message kept.
type ClientSource struct {
	client kubernetes.Interface
}

var (
	_ ObjectSource = (*ClientSource)(nil)
	_ TokenGetter  = (*ClientSource)(nil)
)

// NewClientSource returns a source over client.
func NewClientSource(client kubernetes.Interface) (*ClientSource, error) {
	if client == nil {
		return nil, fmt.Errorf("volumes: client is required: %w", errdefs.ErrInvalidArgument)
	}
	return &ClientSource{client: client}, nil
}

// GetConfigMap implements ObjectSource.
func (s *ClientSource) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	cm, err := s.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, classifyAPIError(err)
	}
	return cm, nil
}

// GetSecret implements ObjectSource.
func (s *ClientSource) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	sec, err := s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, classifyAPIError(err)
	}
	return sec, nil
}

// GetServiceAccountToken implements TokenGetter with the TokenRequest API
// (POST …/serviceaccounts/<name>/token).
func (s *ClientSource) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	tr, err := s.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return nil, classifyAPIError(err)
	}
	return tr, nil
}

// classifyAPIError wraps an API error with its errdefs class.
func classifyAPIError(err error) error {
	var class error
	switch {
	case apierrors.IsNotFound(err):
		class = errdefs.ErrNotFound
	case apierrors.IsForbidden(err):
		class = errdefs.ErrPermissionDenied
	case apierrors.IsUnauthorized(err):
		class = errdefs.ErrUnauthenticated
	case apierrors.IsBadRequest(err), apierrors.IsInvalid(err):
		class = errdefs.ErrInvalidArgument
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		class = errdefs.ErrDeadlineExceeded
	default:
		class = errdefs.ErrUnavailable
	}
	return fmt.Errorf("%w: %w", err, class)
}
