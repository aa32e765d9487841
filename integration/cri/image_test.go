package cri_test

import (
	"slices"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPullAnonymously(t *testing.T) {
	c, env := newClient(t)
	ctx := testContext(t)
	ref := pullBusybox(t, c)
	if !strings.HasPrefix(ref, "sha256:") {
		t.Errorf("image ref = %q, want an image ID", ref)
	}
	img, err := c.ImageStatus(ctx, env.BusyboxImage)
	if err != nil {
		t.Fatal(err)
	}
	if img == nil || img.Id != ref || !slices.Contains(img.RepoTags, env.BusyboxImage) {
		t.Fatalf("ImageStatus(%s) = %v, want id %s tagged %s", env.BusyboxImage, img, ref, env.BusyboxImage)
	}
	// (containerd 1.6 ignores ListImages' filter; the image must be listed.)
	list, err := c.ListImages(ctx, &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: env.BusyboxImage}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list, func(i *runtimeapi.Image) bool { return i.Id == ref }) {
		t.Errorf("ListImages does not list %s (%s): %v", env.BusyboxImage, ref, list)
	}
	// The sandbox image is containerd's sandbox_image from the same registry.
	if img, err := c.ImageStatus(ctx, env.PauseImage); err != nil || img == nil {
		if _, err := c.PullImage(ctx, env.PauseImage, nil, nil); err != nil {
			t.Errorf("pull the pause image %s: %v", env.PauseImage, err)
		}
	}
}

func TestPullWithCredentials(t *testing.T) {
	c, env := newClient(t)
	ctx := testContext(t)

	ref, err := c.PullImage(ctx, env.AuthBusyboxImage, &runtimeapi.AuthConfig{
		Username: env.AuthUser, Password: env.AuthPassword,
	}, nil)
	if err != nil {
		t.Fatalf("PullImage(%s) with credentials: %v", env.AuthBusyboxImage, err)
	}
	img, err := c.ImageStatus(ctx, env.AuthBusyboxImage)
	if err != nil || img == nil || img.Id != ref {
		t.Fatalf("ImageStatus(%s) = %v, %v", env.AuthBusyboxImage, img, err)
	}

	// Remove it (idempotently) so the failing pulls below cannot be served
	// from the local store.
	if err := c.RemoveImage(ctx, env.AuthBusyboxImage); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveImage(ctx, env.AuthBusyboxImage); err != nil {
		t.Errorf("second RemoveImage: %v", err)
	}
	if img, err := c.ImageStatus(ctx, env.AuthBusyboxImage); err != nil || img != nil {
		t.Fatalf("ImageStatus after removal = %v, %v; want nil, nil", img, err)
	}

	for name, auth := range map[string]*runtimeapi.AuthConfig{
		"wrong password": {Username: env.AuthUser, Password: "not-" + env.AuthPassword},
		"wrong user":     {Username: "intruder", Password: env.AuthPassword},
		"no credentials": nil,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.PullImage(ctx, env.AuthBusyboxImage, auth, nil)
			if err == nil {
				t.Fatalf("pull of %s succeeded", env.AuthBusyboxImage)
			}
			msg := err.Error()
			// A clear error: it names the operation, the image and the
			// registry that refused.
			if !strings.Contains(msg, "PullImage") || !strings.Contains(msg, env.AuthRegistry) {
				t.Errorf("error %q does not name PullImage and the registry %s", msg, env.AuthRegistry)
			}
			if !strings.Contains(strings.ToLower(msg), "401") && !strings.Contains(strings.ToLower(msg), "unauthorized") {
				t.Errorf("error %q does not say the registry refused the credentials", msg)
			}
			t.Logf("%s: %v", name, err)
		})
	}
	if img, err := c.ImageStatus(ctx, env.AuthBusyboxImage); err != nil || img != nil {
		t.Errorf("a refused pull left an image: %v, %v", img, err)
	}
}

func TestPullUnknownImageFails(t *testing.T) {
	c, env := newClient(t)
	image := env.Registry + "/berth/does-not-exist:1"
	_, err := c.PullImage(testContext(t), image, nil, nil)
	if err == nil || !strings.Contains(err.Error(), image) {
		t.Fatalf("PullImage(%s) = %v, want an error naming the image", image, err)
	}
}
