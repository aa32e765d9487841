package cri

import (
	"context"
	"errors"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
)

// PullImage pulls image (with auth when not nil) and returns the image
// reference the runtime resolved it to (its image ID). It is bounded by ctx
// only: pulls may be long.
func (c *Client) PullImage(ctx context.Context, image string, auth *runtimeapi.AuthConfig, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := c.images.PullImage(ctx, &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: image}, Auth: auth, SandboxConfig: sandboxCfg,
	})
	if err != nil {
		return "", translate("PullImage", image, err)
	}
	return resp.GetImageRef(), nil
}

// ImageStatus returns the image (by reference or ID), or (nil, nil) when the
// runtime does not have it.
func (c *Client) ImageStatus(ctx context.Context, image string) (*runtimeapi.Image, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		err = translate("ImageStatus", image, err)
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return resp.GetImage(), nil
}

// ListImages lists the images matching filter (nil: all).
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.images.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, translate("ListImages", "", err)
	}
	return resp.GetImages(), nil
}

// RemoveImage removes an image (by reference or ID). An image already absent
// counts as removed (nil).
func (c *Client) RemoveImage(ctx context.Context, image string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	return ignoreNotFound(translate("RemoveImage", image, err))
}

// ImageFsInfo returns the usage of the filesystems that hold images and containers.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, translate("ImageFsInfo", "", err)
	}
	return resp, nil
}
