// Package mounts holds the Linux mount primitives the CSI packages share:
// reading /proc/self/mountinfo, bind mounts, unmounting, and loop devices.
package mounts

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Info is one line of /proc/self/mountinfo.
type Info struct {
	// MountPoint is where the filesystem is mounted.
	MountPoint string
	// Root is the path inside the source filesystem that is mounted (a bind mount's source dir).
	Root string
	// FSType is the filesystem type, e.g. "ext4".
	FSType string
	// Source is the mount source, e.g. "/dev/loop3".
	Source string
	// Options are the per-mount options, e.g. "ro,relatime".
	Options string
}

// ReadOnly reports whether the mount is read-only.
func (i Info) ReadOnly() bool {
	for _, o := range strings.Split(i.Options, ",") {
		if o == "ro" {
			return true
		}
	}
	return false
}

// List returns the mounts of this process's mount namespace.
func List() ([]Info, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return parse(data)
}

func parse(data []byte) ([]Info, error) {
	var out []Info
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+3 {
			return nil, fmt.Errorf("mountinfo: malformed line %q", sc.Text())
		}
		out = append(out, Info{
			Root:       unescape(fields[3]),
			MountPoint: unescape(fields[4]),
			Options:    fields[5],
			FSType:     fields[sep+1],
			Source:     unescape(fields[sep+2]),
		})
	}
	return out, sc.Err()
}

// unescape decodes the octal escapes (\040 for a space, …) mountinfo uses.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Canonical resolves symlinks in path where it exists, so it compares equal
// to the mount points the kernel reports.
func Canonical(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return filepath.Clean(path)
}

// Find returns the topmost mount at path, if any.
func Find(path string) (Info, bool, error) {
	all, err := List()
	if err != nil {
		return Info{}, false, err
	}
	path = Canonical(path)
	var found Info
	ok := false
	for _, m := range all {
		if m.MountPoint == path {
			found, ok = m, true // later lines are mounted on top of earlier ones
		}
	}
	return found, ok, nil
}

// IsMountPoint reports whether something is mounted at path.
func IsMountPoint(path string) (bool, error) {
	_, ok, err := Find(path)
	return ok, err
}

// Under returns the mount points at or below dir.
func Under(dir string) ([]string, error) {
	all, err := List()
	if err != nil {
		return nil, err
	}
	dir = Canonical(dir)
	var out []string
	for _, m := range all {
		if m.MountPoint == dir || strings.HasPrefix(m.MountPoint, dir+"/") {
			out = append(out, m.MountPoint)
		}
	}
	return out, nil
}
