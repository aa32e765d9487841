package exepages

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestReleaseDropsTheExecutablesCleanPages(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	before, err := Mappings(exe)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) == 0 {
		t.Fatalf("no mapping of %s in /proc/self/smaps", exe)
	}
	var writable int
	for _, m := range before {
		if m.End <= m.Start {
			t.Fatalf("mapping %x-%x is empty", m.Start, m.End)
		}
		if m.Perms[1] == 'w' {
			writable++
		}
	}

	r, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if r.Mappings == 0 || r.Mappings > len(before)-writable {
		t.Fatalf("released %d mappings of %d (%d writable)", r.Mappings, len(before), writable)
	}
	if r.RssAfter >= r.RssBefore {
		t.Fatalf("resident bytes of the executable %d before, %d after: nothing given back", r.RssBefore, r.RssAfter)
	}
	// Read-only data: no read-ahead any more, and most of its pages are
	// out of the page cache; code keeps read-ahead.
	flags := vmFlags(t, exe)
	for _, m := range before {
		switch {
		case m.Perms[1] == 'w' || m.Anonymous != 0:
		case m.Perms[2] == 'x':
			if slices.Contains(flags[m.Start], "rr") {
				t.Errorf("code mapping %x-%x has read-ahead disabled", m.Start, m.End)
			}
		default:
			if !slices.Contains(flags[m.Start], "rr") {
				t.Errorf("read-only data mapping %x-%x keeps read-ahead (VmFlags %v)", m.Start, m.End, flags[m.Start])
			}
			if cached, pages := pageCacheResidency(t, m); cached*2 > pages {
				t.Errorf("read-only data mapping %x-%x: %d of its %d pages still in the page cache", m.Start, m.End, cached, pages)
			}
		}
	}
	// The code keeps working: it faults back in what it runs.
	if again, err := Release(); err != nil || again.Mappings == 0 {
		t.Fatalf("a second release: %+v, %v", again, err)
	}
}

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in         string
		start, end uint64
		ok         bool
	}{
		{"00400000-00452000", 0x400000, 0x452000, true},
		{"7ffd81018000-7ffd8101a000", 0x7ffd81018000, 0x7ffd8101a000, true},
		{"Rss:", 0, 0, false},
		{"10-10", 0, 0, false},
		{"zz-10", 0, 0, false},
	} {
		start, end, ok := parseRange(tc.in)
		if ok != tc.ok || (ok && (start != tc.start || end != tc.end)) {
			t.Errorf("parseRange(%q) = %x, %x, %v; want %x, %x, %v", tc.in, start, end, ok, tc.start, tc.end, tc.ok)
		}
	}
}

// vmFlags maps the start address of each mapping of path to its smaps
// VmFlags.
func vmFlags(t *testing.T, path string) map[uint64][]string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64][]string{}
	var cur uint64
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if start, _, ok := parseRange(fields[0]); ok {
			cur = 0
			if len(fields) >= 6 && fields[5] == path {
				cur = start
			}
			continue
		}
		if cur != 0 && fields[0] == "VmFlags:" {
			out[cur] = fields[1:]
		}
	}
	return out
}

// pageCacheResidency counts the pages of a file mapping that are in the
// page cache (mincore), and all its pages.
func pageCacheResidency(t *testing.T, m Mapping) (cached, pages int) {
	t.Helper()
	vec := make([]byte, (m.End-m.Start+uint64(os.Getpagesize())-1)/uint64(os.Getpagesize()))
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(m.Start), uintptr(m.End-m.Start), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore %x-%x: %v", m.Start, m.End, errno)
	}
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached, len(vec)
}
