// Package exepages gives back the pages of the running executable that
// only start-up needed.
//
// berth is one binary for every role, so starting any role runs the
// package initializers of all of them: code and read-only data spread over
// the whole binary are touched once, and the kernel maps each touched page
// with its neighbours (fault-around, and whole large folios of the page
// cache), leaving tens of megabytes of the executable resident in the
// process although a long-running role such as the agent uses a fraction of
// it. Those pages are clean copies of the file: dropping them from the
// process's page tables costs a fault when a page is used again, and the
// process keeps only what it actually uses.
//
// Read-only data (type descriptors, which the garbage collector reads, and
// the function tables stack unwinding reads) is used a page here and a page
// there, so for it Release goes further: it evicts those pages from the page
// cache (the ones no process maps) and asks for no read-ahead, so a page used
// later comes back alone instead of with megabytes around it. A page used for
// the first time after Release is then read from disk: a burst of new work
// right after costs a little more CPU and latency, once.
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
	// Offset is where in the file the mapping starts.
	Offset uint64
	// Rss and Anonymous (private copies of the file's pages) are in bytes.
	Rss, Anonymous int64
}

// Released reports what Release did.
type Released struct {
	// Mappings is how many read-only mappings were dropped.
	Mappings int
	// RssBefore and RssAfter are the executable's resident bytes.
	RssBefore, RssAfter int64
}

// Release drops the process's read-only mappings of its own executable
// that hold no private copy of a page (smaps' Anonymous is 0: nothing was
// ever written to them, not even relocations), so their pages come back
// only as they are used; for read-only data it also evicts the file's pages
// from the page cache and disables read-ahead (see the package doc).
// Writable mappings (data, bss) are never touched.
func Release() (Released, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Released{}, fmt.Errorf("exepages: %w", err)
	}
	maps, err := Mappings(exe)
	if err != nil {
		return Released{}, err
	}
	file, err := os.Open(exe)
	if err != nil {
		return Released{}, fmt.Errorf("exepages: %w", err)
	}
	defer file.Close()
	var r Released
	for _, m := range maps {
		r.RssBefore += m.Rss
		if strings.Contains(m.Perms, "w") || m.Anonymous != 0 {
			continue
		}
		if strings.Contains(m.Perms, "x") {
			err = madvise(m, unix.MADV_DONTNEED)
		} else {
			err = releaseData(file, m)
		}
		if err != nil {
			return r, err
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

// releaseData drops a read-only data mapping m of file f without
// read-ahead, and evicts its range from the page cache but for the pages
// some process maps. Dirty pages cannot be evicted (a binary written a
// moment ago, by a build): they are written back first.
func releaseData(f *os.File, m Mapping) error {
	if err := madvise(m, unix.MADV_RANDOM); err != nil {
		return err
	}
	if err := madvise(m, unix.MADV_DONTNEED); err != nil {
		return err
	}
	offset, length := int64(m.Offset), int64(m.End-m.Start)
	if err := unix.SyncFileRange(int(f.Fd()), offset, length, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
		return fmt.Errorf("exepages: writing back %s at %x: %w", f.Name(), offset, err)
	}
	if err := unix.Fadvise(int(f.Fd()), offset, length, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("exepages: evicting %s at %x from the page cache: %w", f.Name(), offset, err)
	}
	return nil
}

func madvise(m Mapping, advice int) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.Start), uintptr(m.End-m.Start), uintptr(advice)); errno != 0 {
		return fmt.Errorf("exepages: madvise(%d) %x-%x: %w", advice, m.Start, m.End, errno)
	}
	return nil
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
				offset, _ := strconv.ParseUint(fields[2], 16, 64)
				out = append(out, Mapping{Start: start, End: end, Perms: fields[1], Offset: offset})
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
