package testimages

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"berth/internal/errdefs"
	"berth/internal/prereq"
)

const hostBusybox = "/bin/busybox"

// requireBusybox: the busybox image is built from Debian's busybox-static;
// under CI=true its absence is a failure.
func requireBusybox(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(hostBusybox); err == nil {
		return
	}
	prereq.Missing(t, "%s is missing (install busybox-static)", hostBusybox)
}

type file struct {
	hdr  *tar.Header
	data []byte
}

// files flattens img's filesystem.
func files(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = file{h, data}
	}
}

func TestBusyboxImage(t *testing.T) {
	requireBusybox(t)
	img, err := BusyboxImage(hostBusybox)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want one", len(layers), err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform = %s/%s", cf.OS, cf.Architecture)
	}
	if strings.Join(cf.Config.Cmd, " ") != "sh" || len(cf.Config.Env) != 1 || cf.Config.Env[0] != "PATH="+DefaultPath {
		t.Errorf("config cmd %v env %v", cf.Config.Cmd, cf.Config.Env)
	}

	fs := files(t, img)
	want, _ := os.ReadFile(hostBusybox)
	bb, ok := fs["bin/busybox"]
	if !ok || string(bb.data) != string(want) || bb.hdr.Mode&0o111 == 0 {
		t.Fatalf("bin/busybox missing, different from the host's or not executable")
	}
	for _, applet := range []string{"sh", "httpd", "nc", "wget", "sleep", "cat", "ip", "ps", "hostname", "id"} {
		f, ok := fs["bin/"+applet]
		if !ok || f.hdr.Typeflag != tar.TypeSymlink || f.hdr.Linkname != "busybox" {
			t.Errorf("bin/%s is not a symlink to busybox", applet)
		}
	}
	if tmp := fs["tmp"]; tmp.hdr == nil || tmp.hdr.Typeflag != tar.TypeDir || tmp.hdr.Mode&0o7777 != 0o1777 {
		t.Errorf("tmp is not a 1777 directory: %+v", tmp.hdr)
	}
	if !strings.Contains(string(fs["etc/passwd"].data), "nobody:x:65534:65534:") ||
		!strings.HasPrefix(string(fs["etc/passwd"].data), "root:x:0:0:") {
		t.Errorf("etc/passwd = %q", fs["etc/passwd"].data)
	}
	if !strings.Contains(string(fs["etc/group"].data), ":x:65534:") {
		t.Errorf("etc/group = %q", fs["etc/group"].data)
	}

	// Same input, same digest: the layer has fixed times and order.
	again, err := BusyboxImage(hostBusybox)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds differ: %s vs %s", d1, d2)
	}
}

func TestPauseImage(t *testing.T) {
	bin, err := BuildPause(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	img, err := PauseImage(bin)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != "/pause" {
		t.Errorf("entrypoint = %v", cf.Config.Entrypoint)
	}
	fs := files(t, img)
	if len(fs) != 1 {
		t.Errorf("pause image holds %d entries, want only /pause", len(fs))
	}
	p := fs["pause"]
	if string(p.data) != string(bin) || p.hdr.Mode&0o111 == 0 {
		t.Errorf("/pause is not the built binary, or not executable")
	}
}

func TestImagesRejectNonStaticBinaries(t *testing.T) {
	// /bin/ls is dynamically linked on every Debian/Ubuntu.
	ls, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"not ELF":         []byte("#!/bin/sh\nexit 0\n"),
		"dynamic /bin/ls": ls,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := PauseImage(data); !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("PauseImage = %v, want ErrInvalidArgument", err)
			}
		})
	}
	if _, err := BusyboxImage("/nonexistent/busybox"); err == nil || !strings.Contains(err.Error(), "/nonexistent/busybox") {
		t.Errorf("BusyboxImage(missing) = %v, want an error naming the path", err)
	}
}

// BinaryImage holds only the binary, as its entrypoint; BuildStatic builds
// any main package by import path.
func TestBinaryImage(t *testing.T) {
	bin, err := BuildStatic(context.Background(), "", "berth/cmd/pause")
	if err != nil {
		t.Fatal(err)
	}
	if err := RequireStatic("built", bin); err != nil {
		t.Fatalf("BuildStatic gave a non-static binary: %v", err)
	}
	img, err := BinaryImage("server", bin)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != "/server" || len(cf.Config.Cmd) != 0 ||
		cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("config: entrypoint %v cmd %v platform %s/%s", cf.Config.Entrypoint, cf.Config.Cmd, cf.OS, cf.Architecture)
	}
	fs := files(t, img)
	if f, ok := fs["server"]; len(fs) != 1 || !ok || string(f.data) != string(bin) || f.hdr.Mode&0o111 == 0 {
		t.Errorf("image holds %d entries; want only an executable /server holding the binary", len(fs))
	}
	for _, bad := range []string{"", "a/b", ".", ".."} {
		if _, err := BinaryImage(bad, bin); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("BinaryImage(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if _, err := BinaryImage("script", []byte("#!/bin/sh\n")); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("BinaryImage(script) = %v, want ErrInvalidArgument", err)
	}
}

func TestBuildStaticErrors(t *testing.T) {
	if _, err := BuildStatic(context.Background(), "", ""); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("BuildStatic(no package) = %v, want ErrInvalidArgument", err)
	}
	const missing = "berth/no/such/package"
	if _, err := BuildStatic(context.Background(), "", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("BuildStatic(%s) = %v, want an error naming the package", missing, err)
	}
}

// Image keeps each file's owner and its setuid, setgid and sticky bits (the
// nonewprivs e2e image is a setuid-root binary), and refuses absolute names.
func TestImageOwnersAndSpecialBits(t *testing.T) {
	img, err := Image([]File{
		{Name: "usr", Mode: fs.ModeDir | 0o755},
		{Name: "usr/nnp", Mode: fs.ModeSetuid | 0o755, Data: []byte("x")},
		{Name: "usr/g", Mode: fs.ModeSetgid | 0o750, Data: []byte("y"), UID: 1234, GID: 50000},
		{Name: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Name: "usr/link", Link: "nnp"},
	}, v1.Config{User: "1234"})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, img)
	for name, want := range map[string]struct {
		mode     int64
		uid, gid int
		typ      byte
	}{
		"usr/nnp":  {0o4755, 0, 0, tar.TypeReg},
		"usr/g":    {0o2750, 1234, 50000, tar.TypeReg},
		"tmp":      {0o1777, 0, 0, tar.TypeDir},
		"usr/link": {0o777, 0, 0, tar.TypeSymlink},
	} {
		f, ok := got[name]
		if !ok {
			t.Errorf("%s missing from the image", name)
			continue
		}
		if f.hdr.Mode != want.mode || f.hdr.Uid != want.uid || f.hdr.Gid != want.gid || f.hdr.Typeflag != want.typ {
			t.Errorf("%s: mode %o uid %d gid %d type %c, want mode %o uid %d gid %d type %c",
				name, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid, f.hdr.Typeflag, want.mode, want.uid, want.gid, want.typ)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "1234" {
		t.Errorf("user = %q, want 1234", cf.Config.User)
	}
	if _, err := Image([]File{{Name: "/abs", Data: []byte("z")}}, v1.Config{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("absolute name: err = %v, want ErrInvalidArgument", err)
	}
}
