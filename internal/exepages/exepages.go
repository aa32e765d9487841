// Package exepages gives back the pages of the running executable that
// only start-up needed.
//
// berth is one binary for every role, so starting any role runs the
// package initializers of all of them: code and read-only data spread over
// the whole binary are touched once, and the kernel maps each touched page
// with its neighbours (fault-around), leaving tens of megabytes of the
// executable resident in the process although a long-running role such as
// the agent uses a fraction of it. Those pages are clean copies of the
// file: dropping them from the process's page tables costs nothing but a
// minor fault when a page is used again, and the process keeps only what
// it actually runs.
package exepages

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mapping is one mapping of the executable as /proc/self/smaps shows it.
type Mapping struct {
	Start, End uint64
	Perms      string
	// Rss and Anonymous (private copies of the file's pages) are in bytes.
	Rss, Anonymous int64
}

// Released reports what Release did.
type Released struct {
	// Mappings is how many mappings were dropped.
	Mappings int
	// RssBefore and RssAfter are the executable's resident bytes.
	RssBefore, RssAfter int64
}

// Release drops the process's read-only mappings of its own executable
// that hold no private copy of a page (smaps' Anonymous is 0: nothing was
// ever written to them, not even relocations), so their pages come back
// from the page cache only as they are used. Writable mappings (data, bss)
// are never touched.
func Release() (Released, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Released{}, fmt.Errorf("exepages: %w", err)
	}
	maps, err := Mappings(exe)
	if err != nil {
		return Released{}, err
	}
	var r Released
	for _, m := range maps {
		r.RssBefore += m.Rss
		if strings.Contains(m.Perms, "w") || m.Anonymous != 0 {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.Start), uintptr(m.End-m.Start), unix.MADV_DONTNEED); errno != 0 {
			return r, fmt.Errorf("exepages: madvise %x-%x: %w", m.Start, m.End, errno)
		}
		r.Mappings++
	}
	after, err := Mappings(exe)
	if err != nil {
		return r, err
	}
	for _, m := range after {
		r.RssAfter += m.Rss
	}
	return r, nil
}

// Mappings lists the process's mappings of the file at path, from
// /proc/self/smaps.
func Mappings(path string) ([]Mapping, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("exepages: %w", err)
	}
	defer f.Close()
	var (
		out []Mapping
		cur *Mapping
	)
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 {
			continue
		}
		if start, end, ok := parseRange(fields[0]); ok && len(fields) >= 5 {
			cur = nil
			if len(fields) >= 6 && fields[5] == path {
				out = append(out, Mapping{Start: start, End: end, Perms: fields[1]})
				cur = &out[len(out)-1]
			}
			continue
		}
		if cur == nil || len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "Rss:":
			cur.Rss = kb << 10
		case "Anonymous:":
			cur.Anonymous = kb << 10
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("exepages: reading smaps: %w", err)
	}
	return out, nil
}

// parseRange parses an smaps header's "start-end" address range.
func parseRange(s string) (start, end uint64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseUint(a, 16, 64)
	end, err2 := strconv.ParseUint(b, 16, 64)
	return start, end, err1 == nil && err2 == nil && end > start
}
