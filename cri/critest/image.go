package critest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageService implements runtime.v1.ImageService over the Server's state.
type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	s *Server
}

// registryImage is an image "the registry" has.
type registryImage struct {
	ref            string // normalized, with tag
	id             string // "sha256:…"
	digest         string // "sha256:…" of the manifest
	size           uint64
	user, password string // non-empty: pulls need these credentials
}

// image is an image the runtime has.
type image struct {
	id      string
	tags    []string
	digests []string
	size    uint64
}

func (im *image) api() *runtimeapi.Image {
	return &runtimeapi.Image{
		Id: im.id, RepoTags: slices.Clone(im.tags), RepoDigests: slices.Clone(im.digests),
		Size: im.size, Spec: &runtimeapi.ImageSpec{Image: im.id},
	}
}

// normalize turns an image reference into containerd's full form:
// "busybox" → "docker.io/library/busybox:latest". digest is set for
// "name@sha256:…" references.
func normalize(ref string) (name, digest string, err error) {
	if ref == "" || strings.ContainsAny(ref, " \t\n") || ref != strings.TrimSpace(ref) {
		return "", "", fmt.Errorf("invalid reference format %q", ref)
	}
	name = ref
	if i := strings.Index(name, "@"); i >= 0 {
		name, digest = name[:i], name[i+1:]
		if !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
			return "", "", fmt.Errorf("invalid digest in reference %q", ref)
		}
	}
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", name
		if !strings.Contains(rest, "/") {
			rest = "library/" + rest
		}
	}
	if rest == "" || rest != strings.ToLower(rest) {
		return "", "", fmt.Errorf("invalid reference format %q: repository name must be lowercase", ref)
	}
	if digest == "" && !strings.Contains(rest[strings.LastIndex(rest, "/")+1:], ":") {
		rest += ":latest"
	}
	return domain + "/" + rest, digest, nil
}

// repository strips the tag from a normalized name.
func repository(name string) string {
	slash := strings.LastIndex(name, "/")
	if i := strings.LastIndex(name, ":"); i > slash {
		return name[:i]
	}
	return name
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (s *Server) addRegistryImage(ref, user, password string) *registryImage {
	name, _, err := normalize(ref)
	if err != nil {
		panic("critest: " + err.Error())
	}
	ri := &registryImage{
		ref: name, id: sha("config:" + name), digest: sha("manifest:" + name),
		size: uint64(1<<20 + len(name)), user: user, password: password,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registry[name] = ri
	return ri
}

// AddImage puts an image into the fake registry, pullable anonymously, and
// returns the image ID a pull will report. ref is normalized as containerd
// does ("busybox" is "docker.io/library/busybox:latest"). It panics on a
// malformed reference.
func (s *Server) AddImage(ref string) string { return s.addRegistryImage(ref, "", "").id }

// AddPrivateImage puts an image into the fake registry that only pulls with
// the given credentials; others get containerd's "401 Unauthorized" error
// naming the registry host. It returns the image ID.
func (s *Server) AddPrivateImage(ref, username, password string) string {
	return s.addRegistryImage(ref, username, password).id
}

// PreloadImage puts an image into the registry and into the runtime as if
// already pulled, and returns its ID.
func (s *Server) PreloadImage(ref string) string {
	ri := s.addRegistryImage(ref, "", "")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store(ri)
	return ri.id
}

// store records a pulled image; callers hold s.mu.
func (s *Server) store(ri *registryImage) {
	im := s.images[ri.id]
	if im == nil {
		im = &image{id: ri.id, size: ri.size}
		s.images[ri.id] = im
	}
	if !slices.Contains(im.tags, ri.ref) {
		im.tags = append(im.tags, ri.ref)
	}
	if d := repository(ri.ref) + "@" + ri.digest; !slices.Contains(im.digests, d) {
		im.digests = append(im.digests, d)
	}
}

// findImage looks an image up by reference, digest reference or ID (full or
// hex); callers hold s.mu.
func (s *Server) findImage(ref string) *image {
	if im := s.images[ref]; im != nil {
		return im
	}
	if im := s.images["sha256:"+ref]; im != nil {
		return im
	}
	name, digest, err := normalize(ref)
	if err != nil {
		return nil
	}
	for _, im := range s.images {
		if digest != "" {
			if slices.Contains(im.digests, name+"@"+digest) {
				return im
			}
		} else if slices.Contains(im.tags, name) {
			return im
		}
	}
	return nil
}

// credentialsMatch checks a pull's auth against the image's credentials.
func credentialsMatch(ri *registryImage, auth *runtimeapi.AuthConfig) bool {
	user, pass := auth.GetUsername(), auth.GetPassword()
	if a := auth.GetAuth(); a != "" {
		raw, err := base64.StdEncoding.DecodeString(a)
		if err != nil {
			return false
		}
		user, pass, _ = strings.Cut(string(raw), ":")
	}
	return user == ri.user && pass == ri.password
}

func (i *imageService) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	s := i.s
	ref := req.GetImage().GetImage()
	name, digest, err := normalize(ref)
	if err != nil {
		return nil, errf(codes.InvalidArgument, "failed to parse image reference %q: %v", ref, err)
	}
	full := name
	if digest != "" {
		full = name + "@" + digest
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ri *registryImage
	if digest == "" {
		ri = s.registry[name]
	} else {
		for _, r := range s.registry {
			if r.digest == digest && repository(r.ref) == name {
				ri = r
				break
			}
		}
	}
	if ri == nil {
		return nil, errf(codes.NotFound, "failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", full, full, full)
	}
	if ri.user != "" && !credentialsMatch(ri, req.GetAuth()) {
		host, _, _ := strings.Cut(name, "/")
		tag := ri.ref[strings.LastIndex(ri.ref, ":")+1:]
		return nil, errf(codes.Unknown, "failed to pull and unpack image %q: failed to resolve reference %q: pulling from host %s failed with status code [manifests %s]: 401 Unauthorized", full, full, host, tag)
	}
	s.store(ri)
	return &runtimeapi.PullImageResponse{ImageRef: ri.id}, nil
}

func (i *imageService) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	im := s.findImage(req.GetImage().GetImage())
	if im == nil {
		// containerd answers an empty response, not NotFound.
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	resp := &runtimeapi.ImageStatusResponse{Image: im.api()}
	if req.GetVerbose() {
		resp.Info = map[string]string{"info": fmt.Sprintf(`{"id":%q}`, im.id)}
	}
	return resp, nil
}

func (i *imageService) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		var out []*runtimeapi.Image
		if im := s.findImage(ref); im != nil {
			out = append(out, im.api())
		}
		return &runtimeapi.ListImagesResponse{Images: out}, nil
	}
	out := make([]*runtimeapi.Image, 0, len(s.images))
	for _, im := range s.images {
		out = append(out, im.api())
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

func (i *imageService) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// containerd removes every reference of the image, and answers success
	// for an image it does not have.
	if im := s.findImage(req.GetImage().GetImage()); im != nil {
		delete(s.images, im.id)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (i *imageService) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var used uint64
	for _, im := range s.images {
		used += im.size
	}
	mountpoint := s.imageFsMountpoint
	if mountpoint == "" {
		mountpoint = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs"
	}
	fs := &runtimeapi.FilesystemUsage{
		Timestamp:  now(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: uint64(len(s.images))},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}
