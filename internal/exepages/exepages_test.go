package exepages

import (
	"os"
	"testing"
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
