package volumes

import (
	"context"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ ClaimSource = (*ClientSource)(nil)

// GetPersistentVolumeClaim implements ClaimSource.
func (s *ClientSource) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	pvc, err := s.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, classifyAPIError(err)
	}
	return pvc, nil
}

// GetPersistentVolume implements ClaimSource.
func (s *ClientSource) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	pv, err := s.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, classifyAPIError(err)
	}
	return pv, nil
}

// GetCSIDriver implements ClaimSource.
func (s *ClientSource) GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	d, err := s.client.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, classifyAPIError(err)
	}
	return d, nil
}
