package mounts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Loop is an attached loop device. Close it once the device is mounted: the
// device is set to auto-clear, so it detaches by itself when the last user
// (the mount) goes away.
type Loop struct {
	// Device is the device node, e.g. /dev/loop3.
	Device string
	f      *os.File
}

// Close releases the handle used to set the device up.
func (l *Loop) Close() error { return l.f.Close() }

// AttachLoop attaches the file at path to a free loop device, read-write,
// with auto-clear set.
func AttachLoop(path string) (*Loop, error) {
	backing, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open loop backing file: %w", err)
	}
	defer backing.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/loop-control: %w", err)
	}
	defer ctl.Close()
	for range 10 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		if _, err := os.Stat(dev); errors.Is(err, os.ErrNotExist) {
			if err := unix.Mknod(dev, unix.S_IFBLK|0o660, int(unix.Mkdev(7, uint32(n)))); err != nil && !errors.Is(err, unix.EEXIST) {
				return nil, fmt.Errorf("create %s: %w", dev, err)
			}
		}
		f, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", dev, err)
		}
		if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_FD, int(backing.Fd())); err != nil {
			f.Close()
			if errors.Is(err, unix.EBUSY) { // another process took it first
				continue
			}
			return nil, fmt.Errorf("attach %s to %s: %w", path, dev, err)
		}
		info := unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}
		copy(info.File_name[:], path)
		if err := unix.IoctlLoopSetStatus64(int(f.Fd()), &info); err != nil {
			_ = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0)
			f.Close()
			return nil, fmt.Errorf("set status of %s: %w", dev, err)
		}
		return &Loop{Device: dev, f: f}, nil
	}
	return nil, fmt.Errorf("attach %s: every free loop device was taken by someone else", path)
}

// LoopDevicesFor returns the loop devices whose backing file is path.
func LoopDevicesFor(path string) ([]string, error) {
	entries, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	want := filepath.Clean(path)
	var out []string
	for _, e := range entries {
		data, err := os.ReadFile(e)
		if err != nil {
			continue // detached meanwhile
		}
		got := strings.TrimSuffix(strings.TrimSpace(string(data)), " (deleted)")
		if got == want {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(e))))
		}
	}
	return out, nil
}

// DetachLoops detaches every loop device backed by path and waits (up to
// timeout) until the kernel reports none left.
func DetachLoops(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		devs, err := LoopDevicesFor(path)
		if err != nil {
			return err
		}
		if len(devs) == 0 {
			return nil
		}
		for _, dev := range devs {
			f, err := os.OpenFile(dev, os.O_RDONLY, 0)
			if err != nil {
				continue
			}
			err = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0)
			f.Close()
			if err != nil && !errors.Is(err, unix.ENXIO) && !errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("detach %s from %s: %w", dev, path, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("loop devices %v still attached to %s after %s", devs, path, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
