package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

// checkHostPath applies the hostPath type check, creating the directory
// (mode 0755) or file (mode 0644) for the *OrCreate types, as upstream. The
// error messages are upstream's.
func checkHostPath(src *v1.HostPathVolumeSource) error {
	if src.Path == "" {
		return fmt.Errorf("hostPath.path is required: %w", errdefs.ErrInvalidArgument)
	}
	if !filepath.IsAbs(src.Path) {
		return fmt.Errorf("hostPath.path %q must be an absolute path: %w", src.Path, errdefs.ErrInvalidArgument)
	}
	if err := checkSubPath(strings.TrimPrefix(src.Path, "/")); err != nil {
		return fmt.Errorf("hostPath.path %q %w", src.Path, err)
	}
	t := v1.HostPathUnset
	if src.Type != nil {
		t = *src.Type
	}
	p := src.Path
	info, statErr := os.Stat(p)
	exists := statErr == nil
	mode := fs.FileMode(0)
	if exists {
		mode = info.Mode()
	}
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			return makeHostDir(p)
		}
		fallthrough
	case v1.HostPathDirectory:
		if !exists || !mode.IsDir() {
			return typeCheckFailed("hostPath type check failed: %s is not a directory", p)
		}
	case v1.HostPathFileOrCreate:
		if !exists {
			return makeHostFile(p)
		}
		fallthrough
	case v1.HostPathFile:
		if !exists || !mode.IsRegular() {
			return typeCheckFailed("hostPath type check failed: %s is not a file", p)
		}
	case v1.HostPathSocket:
		if !exists || mode&fs.ModeSocket == 0 {
			return typeCheckFailed("hostPath type check failed: %s is not a socket file", p)
		}
	case v1.HostPathCharDev:
		if !exists || mode&fs.ModeCharDevice == 0 {
			return typeCheckFailed("hostPath type check failed: %s is not a character device", p)
		}
	case v1.HostPathBlockDev:
		if !exists || mode&fs.ModeDevice == 0 || mode&fs.ModeCharDevice != 0 {
			return typeCheckFailed("hostPath type check failed: %s is not a block device", p)
		}
	default:
		return fmt.Errorf("%s is an invalid volume type: %w", t, errdefs.ErrInvalidArgument)
	}
	return nil
}

func typeCheckFailed(format, path string) error {
	return fmt.Errorf(format+": %w", path, errdefs.ErrInvalidArgument)
}

// makeHostDir creates p (and missing parents); p itself gets mode 0755
// whatever the umask.
func makeHostDir(p string) error {
	if err := os.MkdirAll(p, 0o755); err != nil {
		return fmt.Errorf("hostPath DirectoryOrCreate %s: %w", p, err)
	}
	return os.Chmod(p, 0o755)
}

// makeHostFile creates the empty file p with mode 0644; as upstream, its
// parent directory must exist.
func makeHostFile(p string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hostPath FileOrCreate %s: %w", p, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
