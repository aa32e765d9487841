package cri_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/internal/errdefs"
)

func TestImageLifecycle(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	id := srv.AddImage("busybox")

	img, err := c.ImageStatus(ctx, "busybox")
	if img != nil || err != nil {
		t.Fatalf("ImageStatus before pull = %v, %v; want nil, nil", img, err)
	}
	ref, err := c.PullImage(ctx, "busybox", nil, podConfig("p"))
	if err != nil {
		t.Fatal(err)
	}
	if ref != id {
		t.Fatalf("PullImage ref = %q, want the image ID %q", ref, id)
	}
	for _, name := range []string{"busybox", "busybox:latest", "docker.io/library/busybox:latest", id} {
		img, err = c.ImageStatus(ctx, name)
		if err != nil || img.GetId() != id {
			t.Fatalf("ImageStatus(%q) = %v, %v; want image %s", name, img, err, id)
		}
		if len(img.GetRepoTags()) != 1 || img.GetRepoTags()[0] != "docker.io/library/busybox:latest" || len(img.GetRepoDigests()) != 1 || img.GetSize() == 0 {
			t.Fatalf("ImageStatus(%q) = %v, want the normalized tag, a digest and a size", name, img)
		}
	}
	digestRef := img.GetRepoDigests()[0]
	if got, err := c.ImageStatus(ctx, digestRef); err != nil || got.GetId() != id {
		t.Fatalf("ImageStatus by digest %q = %v, %v", digestRef, got, err)
	}

	all, err := c.ListImages(ctx, nil)
	if err != nil || len(all) != 1 {
		t.Fatalf("ListImages = %v, %v; want one", all, err)
	}
	if got, err := c.ListImages(ctx, &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "nginx"}}); err != nil || len(got) != 0 {
		t.Fatalf("ListImages(nginx) = %v, %v; want none", got, err)
	}
	fs, err := c.ImageFsInfo(ctx)
	if err != nil || len(fs.GetImageFilesystems()) != 1 || fs.GetImageFilesystems()[0].GetUsedBytes().GetValue() != img.GetSize() {
		t.Fatalf("ImageFsInfo = %v, %v; want one filesystem using the image's size", fs, err)
	}

	if err := c.RemoveImage(ctx, "busybox"); err != nil {
		t.Fatal(err)
	}
	if img, err := c.ImageStatus(ctx, id); img != nil || err != nil {
		t.Fatalf("ImageStatus after remove = %v, %v; want nil, nil", img, err)
	}
	if err := c.RemoveImage(ctx, "busybox"); err != nil {
		t.Fatalf("RemoveImage of an absent image = %v, want nil", err)
	}
}

func TestPullUnknownImage(t *testing.T) {
	_, c := newClient(t, cri.Config{})
	_, err := c.PullImage(testCtx(t), "127.0.0.1:5000/nope:v1", nil, nil)
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("PullImage of an unknown image = %v, want ErrNotFound", err)
	}
	want := `cri PullImage "127.0.0.1:5000/nope:v1": failed to pull and unpack image "127.0.0.1:5000/nope:v1": `
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), ": not found") {
		t.Fatalf("error = %q, want the image named and the runtime message kept verbatim", err)
	}
}

func TestPullImageWithCredentials(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	srv.AddPrivateImage("127.0.0.1:5001/private/busybox:1", "alice", "s3cret")
	for _, tc := range []struct {
		name string
		auth *runtimeapi.AuthConfig
		ok   bool
	}{
		{"anonymous", nil, false},
		{"wrong password", &runtimeapi.AuthConfig{Username: "alice", Password: "guess"}, false},
		{"username and password", &runtimeapi.AuthConfig{Username: "alice", Password: "s3cret"}, true},
		{"auth field", &runtimeapi.AuthConfig{Auth: base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.PullImage(ctx, "127.0.0.1:5001/private/busybox:1", tc.auth, nil)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "127.0.0.1:5001") || !strings.Contains(err.Error(), "401 Unauthorized") {
				t.Fatalf("PullImage = %v, want a 401 error naming the registry", err)
			}
		})
	}
}

func TestPullMalformedReference(t *testing.T) {
	_, c := newClient(t, cri.Config{})
	if _, err := c.PullImage(testCtx(t), "Busybox", nil, nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("PullImage of an upper-case reference = %v, want ErrInvalidArgument", err)
	}
}
