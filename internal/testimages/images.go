// Package testimages builds the container images berth's tests (and, later,
// `berth up`'s offline setup) need, in Go, with no daemon and no network: a
// pause image from berth's own cmd/pause, a busybox image from the host's
// static busybox, and one-binary images from any static Go main package. It also serves them from an in-process registry on
// 127.0.0.1, anonymous or behind HTTP basic auth.
package testimages

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"berth/internal/errdefs"
)

// epoch is the modification time of every file in the built layers, so the
// same inputs always give the same digests.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultPath is the PATH both images declare.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BusyboxApplets are the commands the busybox image links to /bin/busybox.
// (`trap`, `cd`, `exit` … are shell builtins and need no link.)
var BusyboxApplets = []string{
	"ash", "sh", "awk", "basename", "cat", "chmod", "chown", "cp", "cut", "date",
	"dd", "df", "dirname", "du", "echo", "env", "expr", "false", "find", "free",
	"grep", "head", "hostname", "id", "ifconfig", "ip", "kill", "ln", "ls", "md5sum",
	"mkdir", "mkfifo", "mktemp", "mount", "mv", "nc", "netstat", "nslookup", "ping",
	"printf", "ps", "pwd", "readlink", "rm", "rmdir", "sed", "seq", "sha256sum", "sleep",
	"sort", "stat", "sync", "tail", "tee", "test", "[", "timeout", "top", "touch",
	"tr", "true", "uname", "uniq", "wc", "wget", "whoami", "xargs", "yes", "httpd",
	"umount", "usleep", "nproc", "realpath", "which", "watch",
}

// BuildPause compiles berth's cmd/pause statically (CGO_ENABLED=0, stripped)
// with the go tool and returns the binary. moduleDir is any directory inside
// the berth module ("" = the current directory).
func BuildPause(ctx context.Context, moduleDir string) ([]byte, error) {
	return BuildStatic(ctx, moduleDir, "berth/cmd/pause")
}

// BuildStatic compiles the main package pkg (an import path, e.g.
// "berth/cmd/pause") statically (CGO_ENABLED=0, stripped) with the go tool
// and returns the binary. moduleDir is any directory inside the module that
// holds pkg ("" = the current directory).
func BuildStatic(ctx context.Context, moduleDir, pkg string) ([]byte, error) {
	if pkg == "" {
		return nil, fmt.Errorf("testimages: build: no package given: %w", errdefs.ErrInvalidArgument)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
		if _, serr := os.Stat(goBin); serr != nil {
			return nil, fmt.Errorf("testimages: build %s: no go tool on PATH or at %s: %w", pkg, goBin, errdefs.ErrNotFound)
		}
	}
	tmp, err := os.MkdirTemp("", "berth-static-build-")
	if err != nil {
		return nil, fmt.Errorf("testimages: build %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "bin")
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("testimages: go build %s: %v\n%s", pkg, err, msg)
	}
	return os.ReadFile(out)
}

// PauseImage is a one-layer image holding pauseBinary at /pause, its
// entrypoint.
func PauseImage(pauseBinary []byte) (v1.Image, error) {
	return BinaryImage("pause", pauseBinary)
}

// BinaryImage is a one-layer image holding nothing but the static binary
// at /<name>, which is its entrypoint; PATH is DefaultPath and the working
// directory /. Arguments come from the container's args.
func BinaryImage(name string, binary []byte) (v1.Image, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("testimages: binary image: name %q must be a single path element: %w", name, errdefs.ErrInvalidArgument)
	}
	if err := RequireStatic(name+" binary", binary); err != nil {
		return nil, err
	}
	layer, err := Layer([]File{{Name: name, Mode: 0o755, Data: binary}})
	if err != nil {
		return nil, err
	}
	return newImage(layer, v1.Config{
		Entrypoint: []string{"/" + name},
		Env:        []string{"PATH=" + DefaultPath},
		WorkingDir: "/",
	})
}

// BusyboxImage is a one-layer image around the static busybox binary at
// busyboxPath (e.g. Debian's busybox-static, /bin/busybox): /bin/busybox,
// a symlink per BusyboxApplets entry, /etc/passwd and /etc/group with root
// and nobody (65534), /root, a world-writable sticky /tmp. Its command is sh.
func BusyboxImage(busyboxPath string) (v1.Image, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, fmt.Errorf("testimages: busybox: %w", err)
	}
	if err := RequireStatic(busyboxPath, bin); err != nil {
		return nil, err
	}
	entries := append(BaseFiles(), File{Name: "bin/busybox", Mode: 0o755, Data: bin})
	for _, a := range BusyboxApplets {
		entries = append(entries, File{Name: "bin/" + a, Link: "busybox"})
	}
	layer, err := Layer(entries)
	if err != nil {
		return nil, err
	}
	return newImage(layer, v1.Config{
		Cmd:        []string{"sh"},
		Env:        []string{"PATH=" + DefaultPath},
		WorkingDir: "/",
	})
}

// RequireStatic rejects a binary that needs a dynamic loader: the images
// hold no libc.
func RequireStatic(what string, bin []byte) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("testimages: %s is not an ELF executable: %v: %w", what, err, errdefs.ErrInvalidArgument)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("testimages: %s is dynamically linked; the image has no libc, a static binary is needed: %w",
				what, errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

// BaseFiles are the directories and account files every image with a shell
// has: /bin, /etc/passwd and /etc/group with root and nobody (65534), /root,
// a world-writable sticky /tmp, /usr/bin, /var.
func BaseFiles() []File {
	return []File{
		{Name: "bin", Mode: fs.ModeDir | 0o755},
		{Name: "etc", Mode: fs.ModeDir | 0o755},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte(
			"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Name: "root", Mode: fs.ModeDir | 0o700},
		{Name: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Name: "usr", Mode: fs.ModeDir | 0o755},
		{Name: "usr/bin", Mode: fs.ModeDir | 0o755},
		{Name: "var", Mode: fs.ModeDir | 0o755},
	}
}

// File is one file, directory (Mode has fs.ModeDir) or symlink (Link set) of
// a layer.
type File struct {
	Name string // relative, no leading slash
	Link string // symlink target, when set
	// Mode is the permission bits plus fs.ModeDir, fs.ModeSetuid,
	// fs.ModeSetgid and fs.ModeSticky.
	Mode     fs.FileMode
	Data     []byte
	UID, GID int
}

// Layer writes files into a gzipped tar layer with fixed times, in name
// order (a directory before what it holds, when both are listed).
func Layer(files []File) (v1.Layer, error) {
	sorted := append([]File(nil), files...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range sorted {
		if e.Name == "" || strings.HasPrefix(e.Name, "/") {
			return nil, fmt.Errorf("testimages: layer: file name %q must be relative and not empty: %w", e.Name, errdefs.ErrInvalidArgument)
		}
		h := &tar.Header{Name: e.Name, ModTime: epoch, Format: tar.FormatPAX, Mode: int64(e.Mode.Perm()), Uid: e.UID, Gid: e.GID}
		for bit, tarBit := range map[fs.FileMode]int64{fs.ModeSticky: 0o1000, fs.ModeSetgid: 0o2000, fs.ModeSetuid: 0o4000} {
			if e.Mode&bit != 0 {
				h.Mode |= tarBit
			}
		}
		switch {
		case e.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, e.Name+"/"
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("testimages: layer %s: %w", e.Name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, fmt.Errorf("testimages: layer %s: %w", e.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("testimages: layer: %w", err)
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

// Image is a linux image of this machine's architecture with the one layer
// of files and the config cfg.
func Image(files []File, cfg v1.Config) (v1.Image, error) {
	layer, err := Layer(files)
	if err != nil {
		return nil, err
	}
	return newImage(layer, cfg)
}

// newImage is a linux image of this machine's architecture with one layer.
func newImage(layer v1.Layer, cfg v1.Config) (v1.Image, error) {
	cf, err := empty.Image.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config = cfg
	img, err := mutate.ConfigFile(empty.Image, cf)
	if err != nil {
		return nil, fmt.Errorf("testimages: image config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "berth testimages"},
	})
	if err != nil {
		return nil, fmt.Errorf("testimages: image layer: %w", err)
	}
	return img, nil
}
