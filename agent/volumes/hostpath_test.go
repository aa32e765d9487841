package volumes

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

func TestHostPathTypeChecks(t *testing.T) {
	e := newTestEnv(t)
	host := t.TempDir()
	dir := filepath.Join(host, "dir")
	file := filepath.Join(host, "file")
	sock := filepath.Join(host, "sock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	// A block device node of our own (loop major 7); nothing opens it.
	block := filepath.Join(host, "blk")
	if err := unix.Mknod(block, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 250))); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name     string
		typ      v1.HostPathType
		path     string
		wantErr  string // "" = success
		wantMode os.FileMode
	}{
		{"unset type, missing path", v1.HostPathUnset, filepath.Join(host, "nothing"), "", 0},
		{"Directory exists", v1.HostPathDirectory, dir, "", 0},
		{"Directory is a file", v1.HostPathDirectory, file, "hostPath type check failed: " + file + " is not a directory", 0},
		{"Directory missing", v1.HostPathDirectory, filepath.Join(host, "missing"), "hostPath type check failed: " + filepath.Join(host, "missing") + " is not a directory", 0},
		{"DirectoryOrCreate creates 0755", v1.HostPathDirectoryOrCreate, filepath.Join(host, "new", "deep"), "", os.ModeDir | 0o755},
		{"DirectoryOrCreate on a file", v1.HostPathDirectoryOrCreate, file, "hostPath type check failed: " + file + " is not a directory", 0},
		{"File exists", v1.HostPathFile, file, "", 0},
		{"File is a directory", v1.HostPathFile, dir, "hostPath type check failed: " + dir + " is not a file", 0},
		{"FileOrCreate creates 0644", v1.HostPathFileOrCreate, filepath.Join(host, "newfile"), "", 0o644},
		{"FileOrCreate on a directory", v1.HostPathFileOrCreate, dir, "hostPath type check failed: " + dir + " is not a file", 0},
		{"FileOrCreate without parent", v1.HostPathFileOrCreate, filepath.Join(host, "noparent", "f"), "no such file or directory", 0},
		{"Socket", v1.HostPathSocket, sock, "", 0},
		{"Socket is a file", v1.HostPathSocket, file, "hostPath type check failed: " + file + " is not a socket file", 0},
		{"CharDevice", v1.HostPathCharDev, "/dev/null", "", 0},
		{"CharDevice is a file", v1.HostPathCharDev, file, "hostPath type check failed: " + file + " is not a character device", 0},
		{"BlockDevice is a char device", v1.HostPathBlockDev, "/dev/null", "hostPath type check failed: /dev/null is not a block device", 0},
		{"BlockDevice", v1.HostPathBlockDev, block, "", 0},
		{"invalid type", v1.HostPathType("Weird"), dir, "Weird is an invalid volume type", 0},
		{"relative path", v1.HostPathUnset, "var/log", `hostPath.path "var/log" must be an absolute path`, 0},
		{"backsteps", v1.HostPathDirectory, dir + "/../dir", `hostPath.path "` + dir + `/../dir" must not contain '..'`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod("uid-hp", []v1.Volume{{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: c.path, Type: ptr(c.typ)}}}},
				v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "host", MountPath: "/host", ReadOnly: true}}})
			ms, err := e.mgr.SetUp(ctx, pod)
			if c.wantErr != "" {
				want := `MountVolume.SetUp failed for volume "host" : ` + c.wantErr
				if err == nil || !strings.HasPrefix(err.Error(), `MountVolume.SetUp failed for volume "host" : `) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("SetUp = %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.wantMode != 0 {
				info, err := os.Stat(c.path)
				if err != nil || info.Mode()&(os.ModeType|os.ModePerm) != c.wantMode {
					t.Errorf("created %s mode %v (%v), want %v", c.path, info.Mode(), err, c.wantMode)
				}
			}
			mounts, err := ms.Container(&pod.Spec.Containers[0], nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(mounts) != 1 || mounts[0].HostPath != c.path || !mounts[0].Readonly {
				t.Errorf("mounts = %v, want %s read-only", mounts, c.path)
			}
			if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(c.path); c.typ != v1.HostPathUnset && err != nil {
				t.Errorf("TearDown touched the host path: %v", err)
			}
		})
	}
}

func TestHostPathErrorClass(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("uid-hp2", []v1.Volume{{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/dev/null", Type: ptr(v1.HostPathDirectory)}}}})
	_, err := e.mgr.SetUp(ctx, pod)
	want := `MountVolume.SetUp failed for volume "host" : hostPath type check failed: /dev/null is not a directory: invalid argument`
	if err == nil || err.Error() != want || !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("SetUp = %v\nwant %s", err, want)
	}
}
