// Package mountinfo reads the mount table of /proc/<pid>/mountinfo,
// answers questions about it (what is mounted under a directory, at a path,
// which mount a path is on) and unmounts whole trees.
package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SelfPath is the calling process's mount table.
const SelfPath = "/proc/self/mountinfo"

// Mount is one line of a mountinfo file.
type Mount struct {
	// MountPoint is where the filesystem is mounted (escapes decoded).
	MountPoint string
	// Root is the path inside the filesystem that is mounted there.
	Root string
	// FSType is the filesystem type (e.g. "tmpfs").
	FSType string
	// Source is the mount source (e.g. "tmpfs", "/dev/sda1").
	Source string
	// Options are the per-mount options (e.g. "rw,relatime").
	Options string
	// Optional are the optional fields, e.g. "shared:1" (a peer group
	// member) or "master:2" (a slave of peer group 2).
	Optional []string
	// SuperOptions are the per-superblock options (e.g. "rw,size=1024k").
	SuperOptions string
}

// Read parses the mountinfo file at path.
func Read(path string) ([]Mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse parses mountinfo lines:
// "<id> <parent> <maj:min> <root> <mountpoint> <opts> [optional...] - <fstype> <source> <superopts>".
func Parse(r io.Reader) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		sep := slices.Index(fields, "-")
		if sep < 6 || len(fields) < sep+3 {
			return nil, fmt.Errorf("mountinfo line %d: malformed: %q", n, sc.Text())
		}
		m := Mount{
			Root:       unescape(fields[3]),
			MountPoint: unescape(fields[4]),
			Options:    fields[5],
			Optional:   fields[6:sep:sep],
			FSType:     fields[sep+1],
			Source:     unescape(fields[sep+2]),
		}
		if len(fields) > sep+3 {
			m.SuperOptions = fields[sep+3]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// Under returns the mounts whose mount point is dir or lies below it,
// deepest first (the order to unmount them in). dir is compared as written
// (cleaned, symlinks not resolved), as the kernel reports mount points.
func Under(mounts []Mount, dir string) []Mount {
	dir = filepath.Clean(dir)
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []Mount
	for _, m := range mounts {
		if m.MountPoint == dir || strings.HasPrefix(m.MountPoint, prefix) {
			out = append(out, m)
		}
	}
	// Deeper mount points first; for the same depth the later (upper) mount first.
	slices.Reverse(out)
	slices.SortStableFunc(out, func(a, b Mount) int {
		return strings.Count(b.MountPoint, "/") - strings.Count(a.MountPoint, "/")
	})
	return out
}

// IsMountPoint reports whether some mount in mounts is mounted exactly at path.
func IsMountPoint(mounts []Mount, path string) bool {
	path = filepath.Clean(path)
	for _, m := range mounts {
		if m.MountPoint == path {
			return true
		}
	}
	return false
}

// Containing returns the mount that path is on: the last mounted of those
// whose mount point is the longest prefix of path (nil if none).
func Containing(mounts []Mount, path string) *Mount {
	path = filepath.Clean(path)
	var best *Mount
	for i := range mounts {
		mp := mounts[i].MountPoint
		if mp != "/" && mp != path && !strings.HasPrefix(path, mp+"/") {
			continue
		}
		if best == nil || len(mp) >= len(best.MountPoint) {
			best = &mounts[i]
		}
	}
	return best
}

// Shared reports whether the mount is a member of a shared peer group.
func (m *Mount) Shared() bool {
	for _, o := range m.Optional {
		if strings.HasPrefix(o, "shared:") {
			return true
		}
	}
	return false
}

// ReadOnly reports whether the mount is read-only (its per-mount options
// contain "ro").
func (m *Mount) ReadOnly() bool {
	return slices.Contains(strings.Split(m.Options, ","), "ro")
}

// unescape decodes the octal escapes the kernel writes in mountinfo fields
// for space, tab, newline and backslash (\040, \011, \012, \134); anything
// else, including an incomplete escape, is kept as it is.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
