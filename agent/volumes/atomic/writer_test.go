package atomic

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"berth/internal/errdefs"
)

var tsDirPattern = regexp.MustCompile(`^\.\.2026_11_22_01_02_03\.[0-9]+$`)

func newTestWriter(t *testing.T) (*Writer, string) {
	t.Helper()
	dir := t.TempDir()
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 11, 22, 1, 2, 3, 123456789, time.UTC))
	w, err := NewWriter(dir, clk)
	if err != nil {
		t.Fatal(err)
	}
	return w, dir
}

// listing describes what a reader of dir sees: every visible entry (not
// starting with "..") resolved through its link, with content and mode.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatalf("user-visible %s is not a symlink: %v", e.Name(), err)
		}
		if target != filepath.Join(DataDirName, e.Name()) {
			t.Fatalf("user-visible %s -> %s, want ..data/%s", e.Name(), target, e.Name())
		}
		root := filepath.Join(dir, e.Name())
		if info, err := os.Stat(root); err == nil && info.IsDir() {
			root += "/" // walk through the link
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := os.Stat(p)
			if err != nil {
				return err
			}
			if info.IsDir() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, filepath.Clean(p))
			out[rel] = fmt.Sprintf("%s|%#o", data, info.Mode().Perm())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func tsDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") && e.Name() != DataDirName {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteSequence(t *testing.T) {
	type step struct {
		name        string
		payload     map[string]File
		wantChanged bool
		want        map[string]string
	}
	steps := []step{
		{
			name: "first write",
			payload: map[string]File{
				"a":            {Data: []byte("1"), Mode: 0o644},
				"b":            {Data: []byte("secret"), Mode: 0o400},
				"sub/dir/file": {Data: []byte("nested"), Mode: 0o600},
			},
			wantChanged: true,
			want:        map[string]string{"a": "1|0644", "b": "secret|0400", "sub/dir/file": "nested|0600"},
		},
		{
			name: "same payload writes nothing",
			payload: map[string]File{
				"a":            {Data: []byte("1"), Mode: 0o644},
				"b":            {Data: []byte("secret"), Mode: 0o400},
				"sub/dir/file": {Data: []byte("nested"), Mode: 0o600},
			},
			wantChanged: false,
			want:        map[string]string{"a": "1|0644", "b": "secret|0400", "sub/dir/file": "nested|0600"},
		},
		{
			name: "changed content, removed key, new key",
			payload: map[string]File{
				"a":            {Data: []byte("2"), Mode: 0o644},
				"c":            {Data: []byte("new"), Mode: 0o666},
				"sub/dir/file": {Data: []byte("nested"), Mode: 0o600},
			},
			wantChanged: true,
			want:        map[string]string{"a": "2|0644", "c": "new|0666", "sub/dir/file": "nested|0600"},
		},
		{
			name:        "removed nested tree",
			payload:     map[string]File{"a": {Data: []byte("2"), Mode: 0o644}},
			wantChanged: true,
			want:        map[string]string{"a": "2|0644"},
		},
		{
			name:        "empty payload",
			payload:     map[string]File{},
			wantChanged: true,
			want:        map[string]string{},
		},
	}
	w, dir := newTestWriter(t)
	var prevTs string
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			changed, err := w.Write(s.payload, nil)
			if err != nil {
				t.Fatal(err)
			}
			if changed != s.wantChanged {
				t.Errorf("changed = %v, want %v", changed, s.wantChanged)
			}
			got := listing(t, dir)
			if fmt.Sprint(got) != fmt.Sprint(s.want) {
				t.Errorf("volume holds %v, want %v", got, s.want)
			}
			ts := tsDirs(t, dir)
			if len(ts) != 1 {
				t.Fatalf("timestamped directories %v, want exactly one", ts)
			}
			if !tsDirPattern.MatchString(ts[0]) {
				t.Errorf("timestamped directory %q does not match %s", ts[0], tsDirPattern)
			}
			target, err := os.Readlink(filepath.Join(dir, DataDirName))
			if err != nil || target != ts[0] {
				t.Errorf("..data -> %q (%v), want %q", target, err, ts[0])
			}
			if info, err := os.Stat(filepath.Join(dir, ts[0])); err != nil || info.Mode().Perm() != 0o755 {
				t.Errorf("timestamped directory mode %v (%v), want 0755", info.Mode().Perm(), err)
			}
			if s.wantChanged == (ts[0] == prevTs) {
				t.Errorf("timestamped directory %q, previous %q: changed=%v", ts[0], prevTs, s.wantChanged)
			}
			prevTs = ts[0]
		})
	}
}

func TestWriteSetPermsRunsBeforeVisible(t *testing.T) {
	w, dir := newTestWriter(t)
	var seen string
	_, err := w.Write(map[string]File{"k": {Data: []byte("v"), Mode: 0o644}}, func(tsDir string) error {
		seen = tsDir
		if _, err := os.Lstat(filepath.Join(dir, DataDirName)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("..data exists before setPerms returned (err %v)", err)
		}
		return os.Chmod(filepath.Join(tsDir, "k"), 0o640)
	})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(seen) != dir {
		t.Errorf("setPerms got %q, want a directory in %q", seen, dir)
	}
	if got := listing(t, dir)["k"]; got != "v|0640" {
		t.Errorf("k = %q, want v|0640", got)
	}
	// A failing setPerms leaves the previous content in place.
	_, err = w.Write(map[string]File{"k": {Data: []byte("w"), Mode: 0o644}}, func(string) error { return errors.New("boom") })
	if err == nil {
		t.Fatal("Write with failing setPerms succeeded")
	}
	if got := listing(t, dir)["k"]; got != "v|0640" {
		t.Errorf("after failed write k = %q, want v|0640", got)
	}
	if ts := tsDirs(t, dir); len(ts) != 1 {
		t.Errorf("timestamped directories after failed write %v, want one", ts)
	}
}

func TestWriteRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", "/abs", "../x", "a/../../b", "a/..", "..data", "..foo/x", strings.Repeat("x", 256), strings.Repeat("a/", 2049)} {
		t.Run(p[:min(len(p), 20)], func(t *testing.T) {
			w, dir := newTestWriter(t)
			_, err := w.Write(map[string]File{p: {Data: []byte("x"), Mode: 0o644}}, nil)
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("Write(%q) = %v, want ErrInvalidArgument", p, err)
			}
			if ts := tsDirs(t, dir); len(ts) != 0 {
				t.Errorf("rejected payload left %v", ts)
			}
		})
	}
}

func TestWriteRefusesForeignDataLink(t *testing.T) {
	w, dir := newTestWriter(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, DataDirName)); err != nil {
		t.Fatal(err)
	}
	_, err := w.Write(map[string]File{"k": {Data: []byte("v"), Mode: 0o644}}, nil)
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("Write with ..data -> %s = %v, want ErrConflict", outside, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("file outside the volume touched: %v", err)
	}
}

func TestWriteRemovesStaleTimestampedDirs(t *testing.T) {
	w, dir := newTestWriter(t)
	stale := filepath.Join(dir, "..2020_01_01_00_00_00.42")
	if err := os.MkdirAll(filepath.Join(stale, "half"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(map[string]File{"k": {Data: []byte("v"), Mode: 0o644}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale timestamped directory left: %v", err)
	}
	if ts := tsDirs(t, dir); len(ts) != 1 {
		t.Errorf("timestamped directories %v, want one", ts)
	}
}

func TestWriteRepairsMissingUserVisibleLink(t *testing.T) {
	w, dir := newTestWriter(t)
	payload := map[string]File{"k": {Data: []byte("v"), Mode: 0o644}}
	if _, err := w.Write(payload, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "k")); err != nil {
		t.Fatal(err)
	}
	changed, err := w.Write(payload, nil)
	if err != nil || changed {
		t.Fatalf("Write = %v, %v; want unchanged, nil", changed, err)
	}
	if got := listing(t, dir)["k"]; got != "v|0644" {
		t.Errorf("k = %q after repair, want v|0644", got)
	}
}

// TestConcurrentReaderNeverSeesHalfAnUpdate updates a multi-file payload
// (every file holds the version number; the set of files depends on the
// version) while a reader takes snapshots through ..data. Each snapshot read
// while ..data kept pointing at the same directory must show a single
// version with exactly that version's files, and versions never go back.
func TestConcurrentReaderNeverSeesHalfAnUpdate(t *testing.T) {
	w, dir := newTestWriter(t)
	payloadFor := func(v int) map[string]File {
		p := map[string]File{}
		for i := 0; i < 5+v%3; i++ {
			p[fmt.Sprintf("f%d", i)] = File{Data: []byte(fmt.Sprint(v)), Mode: 0o644}
		}
		p[fmt.Sprintf("d/v%d", v%2)] = File{Data: []byte(fmt.Sprint(v)), Mode: 0o644}
		return p
	}
	if _, err := w.Write(payloadFor(0), nil); err != nil {
		t.Fatal(err)
	}
	const versions = 200
	const readerIterations = 5000

	done := make(chan struct{})
	var wg sync.WaitGroup
	var readerErr error
	var whole, raced int
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := -1
		for i := 0; i < readerIterations; i++ {
			select {
			case <-done:
				if i > 0 {
					return
				}
			default:
			}
			ts, err := os.Readlink(filepath.Join(dir, DataDirName))
			if err != nil {
				readerErr = fmt.Errorf("iteration %d: ..data missing: %v", i, err)
				return
			}
			snap := map[string]string{}
			err = filepath.WalkDir(filepath.Join(dir, ts), func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					return nil
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(filepath.Join(dir, ts), p)
				snap[rel] = string(data)
				return nil
			})
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				readerErr = err
				return
			}
			// ..data moved on while we read: the old directory may be
			// half removed. A reader retries then; that is no half update.
			if after, aerr := os.Readlink(filepath.Join(dir, DataDirName)); err != nil || aerr != nil || after != ts {
				raced++
				continue
			}
			v := -1
			for _, data := range snap {
				fmt.Sscan(data, &v)
				break
			}
			want := payloadFor(v)
			var gotKeys, wantKeys []string
			for k, data := range snap {
				gotKeys = append(gotKeys, k)
				if data != fmt.Sprint(v) {
					readerErr = fmt.Errorf("iteration %d: snapshot mixes versions: %v", i, snap)
					return
				}
			}
			for k := range want {
				wantKeys = append(wantKeys, k)
			}
			sort.Strings(gotKeys)
			sort.Strings(wantKeys)
			if fmt.Sprint(gotKeys) != fmt.Sprint(wantKeys) {
				readerErr = fmt.Errorf("iteration %d: version %d has files %v, want %v", i, v, gotKeys, wantKeys)
				return
			}
			if v < last {
				readerErr = fmt.Errorf("iteration %d: version went back from %d to %d", i, last, v)
				return
			}
			last = v
			whole++
		}
	}()
	for v := 1; v <= versions; v++ {
		if _, err := w.Write(payloadFor(v), nil); err != nil {
			close(done)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if readerErr != nil {
		t.Fatal(readerErr)
	}
	if whole == 0 {
		t.Fatalf("the reader read no whole snapshot (%d raced)", raced)
	}
	t.Logf("%d whole snapshots, %d raced with cleanup", whole, raced)
	if got := listing(t, dir)["f0"]; got != fmt.Sprintf("%d|0644", versions) {
		t.Errorf("final f0 = %q", got)
	}
}
