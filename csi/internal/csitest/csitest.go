// Package csitest holds the test helpers the CSI packages share: the
// prerequisite check for tests that mount, a csi-local driver running in the
// test process, and the after-test checks that nothing stays mounted.
package csitest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"berth/csi/driver"
	"berth/csi/internal/mounts"
)

// RequireMounts checks what tests that mount need: root, loop devices and
// mkfs.ext4. Under CI=true a missing prerequisite fails the test; elsewhere it
// skips with the reason.
func RequireMounts(tb testing.TB) {
	tb.Helper()
	var missing string
	switch {
	case os.Geteuid() != 0:
		missing = "these tests mount filesystems and must run as root"
	case !exists("/dev/loop-control"):
		missing = "/dev/loop-control is missing (loop devices are needed for ext4 volumes)"
	default:
		if _, err := exec.LookPath("mkfs.ext4"); err != nil {
			missing = "mkfs.ext4 is missing (install e2fsprogs)"
		}
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("prerequisite missing under CI=true: %s", missing)
	}
	tb.Skipf("prerequisite missing: %s", missing)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// StartDriver runs a csi-local driver in the test process until the test
// ends. Empty Endpoint and RootDir are filled with paths in a temp dir.
func StartDriver(tb testing.TB, cfg driver.Config) *driver.Driver {
	tb.Helper()
	dir := tb.TempDir()
	if cfg.Endpoint == "" {
		// A short dir: unix socket paths are limited to 107 bytes.
		sockDir, err := os.MkdirTemp("", "csi")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { os.RemoveAll(sockDir) })
		cfg.Endpoint = "unix://" + filepath.Join(sockDir, "csi.sock")
	}
	if cfg.RootDir == "" {
		cfg.RootDir = filepath.Join(dir, "root")
	}
	if cfg.NodeID == "" {
		cfg.NodeID = "node-1"
	}
	d, err := driver.New(cfg)
	if err != nil {
		tb.Fatalf("driver.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("driver.Run: %v", err)
		}
	})
	WaitForSocket(tb, d.Endpoint())
	return d
}

// WaitForSocket polls until a server accepts connections on the unix socket
// at path (10 s deadline). The file alone is not enough: it appears at bind,
// before the server listens, and a connect in between is refused.
func WaitForSocket(tb testing.TB, path string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("unix", path)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("nothing accepted connections on %s within 10s: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// CheckNoMounts registers a cleanup that fails the test if anything is still
// mounted under dir, or a loop device is still backed by a file under it,
// and then unmounts and detaches whatever was left so the machine stays clean.
// Call it after creating dir, so it runs before dir is removed.
func CheckNoMounts(tb testing.TB, dir string) {
	tb.Helper()
	tb.Cleanup(func() {
		left, err := mounts.Under(dir)
		if err != nil {
			tb.Errorf("read mountinfo: %v", err)
		}
		for _, m := range left {
			tb.Errorf("still mounted after the test: %s", m)
		}
		for i := len(left) - 1; i >= 0; i-- {
			_ = mounts.Unmount(left[i])
		}
		devs, err := LoopDevicesUnder(dir)
		if err != nil {
			tb.Errorf("list loop devices: %v", err)
		}
		for _, dev := range devs {
			tb.Errorf("loop device %s still attached after the test", dev)
		}
		_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && filepath.Ext(p) == ".img" {
				_ = mounts.DetachLoops(p, 10*time.Second)
			}
			return nil
		})
	})
}

// LoopDevicesUnder returns the loop devices backed by files under dir.
func LoopDevicesUnder(dir string) ([]string, error) {
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || filepath.Ext(p) != ".img" {
			return nil
		}
		devs, err := mounts.LoopDevicesFor(p)
		out = append(out, devs...)
		return err
	})
	return out, err
}
