// Command demoregistry builds the images of `make demo` and serves them,
// offline, from two registries on 127.0.0.1 until SIGTERM or SIGINT:
//
//   - a public one (anonymous) with berth/web:v1 and berth/web:v2, and
//   - a private one (HTTP basic auth, a fresh random password) with
//     berth/web:v1,
//
// both built from the host's static busybox (Debian's busybox-static): a
// busybox httpd serving a page that names the image's version.
//
// In -dir it writes, before it reports ready by creating -dir/ready:
//
//   - registries.yaml, for `berth up --registries`: the image names of
//     examples/ (PublicRegistry, PrivateRegistry) mirrored to the two
//     registries, so the manifests need no port numbers;
//   - dockerconfig.json, the private registry's credentials as a docker
//     config, for a kubernetes.io/dockerconfigjson pull secret (the node
//     itself has no credentials for it).
//
// It is a tool of hack/demo.sh, not part of berth.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"berth/internal/testimages"
)

// The registry names examples/ uses; registries.yaml mirrors them to the
// registries on 127.0.0.1. ".example" is reserved: no real host has it.
const (
	PublicRegistry  = "registry.berth.example"
	PrivateRegistry = "private.berth.example"
	// Repository is the web image's repository in both registries.
	Repository = "berth/web"
	// PrivateUser is the private registry's user name.
	PrivateUser = "demo"
	// WebPort is the port the web image's httpd listens on.
	WebPort = 8080
)

func main() {
	dir := flag.String("dir", "", "directory to write registries.yaml, dockerconfig.json and ready into (required)")
	busybox := flag.String("busybox", "/bin/busybox", "static busybox binary the images are built from")
	flag.Parse()
	if err := run(*dir, *busybox); err != nil {
		fmt.Fprintln(os.Stderr, "demoregistry:", err)
		os.Exit(1)
	}
}

func run(dir, busybox string) error {
	if dir == "" {
		return errors.New("-dir is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	images := map[string]v1.Image{}
	for _, version := range []string{"v1", "v2"} {
		img, err := webImage(busybox, version)
		if err != nil {
			return err
		}
		images[version] = img
	}

	public, err := testimages.StartRegistry(testimages.RegistryConfig{})
	if err != nil {
		return err
	}
	defer public.Close()
	password, err := randomPassword()
	if err != nil {
		return err
	}
	private, err := testimages.StartRegistry(testimages.RegistryConfig{Username: PrivateUser, Password: password, Realm: "berth-demo"})
	if err != nil {
		return err
	}
	defer private.Close()

	pushCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, p := range []struct {
		reg     *testimages.Registry
		version string
	}{{public, "v1"}, {public, "v2"}, {private, "v1"}} {
		if _, err := p.reg.Push(pushCtx, Repository+":"+p.version, images[p.version]); err != nil {
			return err
		}
	}

	registries := fmt.Sprintf("mirrors:\n  %s:\n    endpoint: [\"http://%s\"]\n  %s:\n    endpoint: [\"http://%s\"]\n",
		PublicRegistry, public.Host(), PrivateRegistry, private.Host())
	if err := os.WriteFile(filepath.Join(dir, "registries.yaml"), []byte(registries), 0o644); err != nil {
		return err
	}
	dockerConfig, err := json.Marshal(map[string]any{"auths": map[string]any{
		PrivateRegistry: map[string]string{
			"username": PrivateUser,
			"password": password,
			"auth":     base64.StdEncoding.EncodeToString([]byte(PrivateUser + ":" + password)),
		},
	}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "dockerconfig.json"), dockerConfig, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return err
	}
	fmt.Printf("demoregistry: %s -> %s (berth/web:v1, berth/web:v2); %s -> %s (user %s; berth/web:v1)\n",
		PublicRegistry, public.Host(), PrivateRegistry, private.Host(), PrivateUser)
	<-ctx.Done()
	return nil
}

// webImage is busybox with /www/index.html naming version, running httpd
// on WebPort after a log line saying so; SIGTERM stops it at once.
func webImage(busybox, version string) (v1.Image, error) {
	base, err := testimages.BusyboxImage(busybox)
	if err != nil {
		return nil, err
	}
	page := fmt.Sprintf("<html><body><h1>berth demo: web %s</h1></body></html>\n", version)
	layer, err := fileLayer("www", "www/index.html", []byte(page))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("web %s: %w", version, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("web %s: %w", version, err)
	}
	cfg := cf.Config
	cfg.Env = append(cfg.Env, "VERSION="+version)
	// sh stays PID 1 to stop at once on SIGTERM (PID 1 gets no default
	// signal handling, and httpd sets none).
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf(
		`trap 'echo "web $VERSION: stopping"; exit 0' TERM; echo "web $VERSION: serving /www on :%d"; httpd -f -p %d -h /www & wait`,
		WebPort, WebPort)}
	cfg.ExposedPorts = map[string]struct{}{fmt.Sprintf("%d/tcp", WebPort): {}}
	img, err = mutate.Config(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("web %s: %w", version, err)
	}
	return img, nil
}

// fileLayer is a layer with the directory dir and the file name (0644,
// owned by root) holding data.
func fileLayer(dir, name string, data []byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: mtime}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// randomPassword is 16 random bytes in hex.
func randomPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
