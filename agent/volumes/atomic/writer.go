// Package atomic writes a volume's files the way the kubelet does for
// configMap, secret, downwardAPI and projected volumes, so that readers never
// see half of an update.
//
// The layout under the volume directory is:
//
//	..2026_11_22_01_02_03.123456789/   the files of the current payload
//	..data -> ..2026_11_22_01_02_03.123456789
//	key    -> ..data/key               one symlink per top-level path
//
// An update writes the whole new payload into a fresh timestamped directory,
// points ..data at it with a single rename (atomic on POSIX), adds or removes
// the top-level symlinks, and removes the previous timestamped directory. A
// payload equal to what is on disk writes nothing.
package atomic

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

const (
	// DataDirName is the symlink pointing at the current timestamped directory.
	DataDirName = "..data"
	// newDataDirName is the temporary symlink renamed over DataDirName.
	newDataDirName = "..data_tmp"
	// timestampFormat names the timestamped directories (a random suffix follows).
	timestampFormat = "..2006_01_02_15_04_05."

	maxPathLength     = 4096
	maxFileNameLength = 255
)

// File is one file of a payload.
type File struct {
	// Data is the file's content.
	Data []byte
	// Mode is the file's permission bits (e.g. 0644).
	Mode int32
	// FsUser, when set, becomes the file's owner.
	FsUser *int64
}

// Writer writes payloads into one volume directory. A Writer is not safe
// for concurrent use; readers of the directory may run at any time.
type Writer struct {
	dir   string
	clock clock.PassiveClock
}

// NewWriter returns a writer for the existing directory dir; clk names the
// timestamped directories (nil: the real clock).
func NewWriter(dir string, clk clock.PassiveClock) (*Writer, error) {
	if dir == "" {
		return nil, fmt.Errorf("atomic: directory is required: %w", errdefs.ErrInvalidArgument)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Writer{dir: dir, clock: clk}, nil
}

// Write makes the directory hold exactly payload (paths relative to the
// directory). setPerms, when not nil, is called with the new timestamped
// directory after the files are written and before they become visible
// (ownership for fsGroup). changed reports whether anything was written.
func (w *Writer) Write(payload map[string]File, setPerms func(tsDir string) error) (changed bool, err error) {
	clean, err := validatePayload(payload)
	if err != nil {
		return false, err
	}
	oldTsName, err := w.currentTsDir()
	if err != nil {
		return false, err
	}
	var oldTsPath string
	var toRemove []string
	modified := true
	if oldTsName != "" {
		oldTsPath = filepath.Join(w.dir, oldTsName)
		if toRemove, err = pathsToRemove(clean, oldTsPath); err != nil {
			return false, err
		}
		if modified, err = newOrModified(clean, oldTsPath); err != nil {
			return false, err
		}
	}
	if !modified && len(toRemove) == 0 {
		// Nothing to write; repair user-visible links a crash may have left out.
		return false, w.createUserVisibleLinks(clean)
	}

	tsDir, err := os.MkdirTemp(w.dir, w.clock.Now().UTC().Format(timestampFormat))
	if err != nil {
		return false, fmt.Errorf("atomic: create timestamped directory in %s: %w", w.dir, err)
	}
	tsName := filepath.Base(tsDir)
	if err := w.fill(tsDir, clean, setPerms); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}

	tmpLink := filepath.Join(w.dir, newDataDirName)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("atomic: remove stale %s: %w", tmpLink, err)
	}
	if err := os.Symlink(tsName, tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("atomic: link %s: %w", tmpLink, err)
	}
	if err := os.Rename(tmpLink, filepath.Join(w.dir, DataDirName)); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("atomic: swap %s: %w", DataDirName, err)
	}
	// From here on the new payload is visible through ..data.
	if err := w.createUserVisibleLinks(clean); err != nil {
		return true, err
	}
	for _, p := range toRemove {
		if strings.Contains(p, "/") {
			continue // inside a timestamped directory: goes with it
		}
		if err := os.Remove(filepath.Join(w.dir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, fmt.Errorf("atomic: remove user-visible path %s: %w", p, err)
		}
	}
	if oldTsPath != "" {
		if err := os.RemoveAll(oldTsPath); err != nil {
			return true, fmt.Errorf("atomic: remove old data %s: %w", oldTsPath, err)
		}
	}
	return true, w.removeStaleTsDirs(tsName)
}

// removeStaleTsDirs removes timestamped directories other than current
// that an interrupted earlier write left behind (never made visible).
func (w *Writer) removeStaleTsDirs(current string) error {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("atomic: list %s: %w", w.dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == current || !e.IsDir() || len(name) < 3 || !strings.HasPrefix(name, "..") || name[2] < '0' || name[2] > '9' {
			continue
		}
		if err := os.RemoveAll(filepath.Join(w.dir, name)); err != nil {
			return fmt.Errorf("atomic: remove stale %s: %w", name, err)
		}
	}
	return nil
}

// currentTsDir returns the name ..data points at ("" when there is none).
// A target that is not a timestamped directory right inside the volume
// directory is refused: the writer never follows links elsewhere.
func (w *Writer) currentTsDir() (string, error) {
	target, err := os.Readlink(filepath.Join(w.dir, DataDirName))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("atomic: read %s link in %s: %w", DataDirName, w.dir, err)
	}
	if strings.Contains(target, "/") || !strings.HasPrefix(target, "..") || target == ".." || target == DataDirName {
		return "", fmt.Errorf("atomic: %s in %s points at %q, not a timestamped directory: %w", DataDirName, w.dir, target, errdefs.ErrConflict)
	}
	return target, nil
}

// fill writes the payload into the new timestamped directory.
func (w *Writer) fill(tsDir string, payload map[string]File, setPerms func(string) error) error {
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return fmt.Errorf("atomic: chmod %s: %w", tsDir, err)
	}
	for _, p := range sortedKeys(payload) {
		f := payload[p]
		full := filepath.Join(tsDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("atomic: create directory for %s: %w", p, err)
		}
		mode := fs.FileMode(f.Mode) & fs.ModePerm
		if err := os.WriteFile(full, f.Data, mode); err != nil {
			return fmt.Errorf("atomic: write %s: %w", p, err)
		}
		// WriteFile's mode is filtered by the umask; set it exactly.
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("atomic: chmod %s: %w", p, err)
		}
		if f.FsUser != nil {
			if err := os.Chown(full, int(*f.FsUser), -1); err != nil {
				return fmt.Errorf("atomic: chown %s: %w", p, err)
			}
		}
	}
	if setPerms != nil {
		if err := setPerms(tsDir); err != nil {
			return fmt.Errorf("atomic: set permissions in %s: %w", tsDir, err)
		}
	}
	return nil
}

// createUserVisibleLinks links each top-level path of the payload to
// ..data/<path> unless a link is already there.
func (w *Writer) createUserVisibleLinks(payload map[string]File) error {
	seen := map[string]bool{}
	for _, p := range sortedKeys(payload) {
		top, _, _ := strings.Cut(p, "/")
		if seen[top] {
			continue
		}
		seen[top] = true
		visible := filepath.Join(w.dir, top)
		if _, err := os.Lstat(visible); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("atomic: stat %s: %w", visible, err)
		}
		if err := os.Symlink(filepath.Join(DataDirName, top), visible); err != nil {
			return fmt.Errorf("atomic: link %s: %w", visible, err)
		}
	}
	return nil
}

// pathsToRemove lists the paths in the old timestamped directory (files and
// directories, relative) that the new payload no longer has.
func pathsToRemove(payload map[string]File, oldTsPath string) ([]string, error) {
	keep := map[string]bool{}
	for p := range payload {
		for d := p; d != "."; d = filepath.Dir(d) {
			keep[d] = true
		}
	}
	var out []string
	err := filepath.WalkDir(oldTsPath, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(oldTsPath, path)
		if err != nil || rel == "." {
			return err
		}
		if !keep[rel] {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("atomic: list %s: %w", oldTsPath, err)
	}
	return out, nil
}

// newOrModified reports whether any payload file is missing from, or has
// other content than, the old timestamped directory. As upstream, only
// content counts: modes come from the (immutable) pod spec.
func newOrModified(payload map[string]File, oldTsPath string) (bool, error) {
	for p, f := range payload {
		full := filepath.Join(oldTsPath, p)
		info, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("atomic: stat %s: %w", full, err)
		}
		if !info.Mode().IsRegular() {
			return true, nil
		}
		old, err := os.ReadFile(full)
		if err != nil {
			return false, fmt.Errorf("atomic: read %s: %w", full, err)
		}
		if !bytes.Equal(old, f.Data) {
			return true, nil
		}
	}
	return false, nil
}

// validatePayload checks every path and returns the payload keyed by clean paths.
func validatePayload(payload map[string]File) (map[string]File, error) {
	out := make(map[string]File, len(payload))
	for p, f := range payload {
		if err := ValidatePath(p); err != nil {
			return nil, err
		}
		out[filepath.Clean(p)] = f
	}
	return out, nil
}

// ValidatePath checks one payload path: relative, at most 4096 characters,
// no element longer than 255 characters, no ".." element, and no first
// element starting with ".." (those names belong to the writer).
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("invalid path: must not be empty: %w", errdefs.ErrInvalidArgument)
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be a relative path: %w", p, errdefs.ErrInvalidArgument)
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path %q: must be at most %d characters: %w", p, maxPathLength, errdefs.ErrInvalidArgument)
	}
	items := strings.Split(p, "/")
	for _, item := range items {
		if item == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..': %w", p, errdefs.ErrInvalidArgument)
		}
		if len(item) > maxFileNameLength {
			return fmt.Errorf("invalid path %q: file names must be at most %d characters: %w", p, maxFileNameLength, errdefs.ErrInvalidArgument)
		}
	}
	if strings.HasPrefix(items[0], "..") {
		return fmt.Errorf("invalid path %q: must not start with '..': %w", p, errdefs.ErrInvalidArgument)
	}
	if filepath.Clean(p) == "." {
		return fmt.Errorf("invalid path %q: must name a file: %w", p, errdefs.ErrInvalidArgument)
	}
	return nil
}

func sortedKeys(m map[string]File) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
