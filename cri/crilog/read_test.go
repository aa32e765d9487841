package crilog

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"berth/internal/syncbuf"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const sample = `2024-01-02T03:04:05.000000001Z stdout F one
2024-01-02T03:04:06.000000002Z stderr F two
2024-01-02T03:04:07.000000003Z stdout P thr
2024-01-02T03:04:07.500000000Z stdout P e
2024-01-02T03:04:08.000000004Z stdout F e!
2024-01-02T03:04:09.000000005Z stderr F four
`

func writeLog(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func int64p(v int64) *int64 { return &v }

func TestReadFile(t *testing.T) {
	path := writeLog(t, sample)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"everything, partial lines joined", Options{}, "one\ntwo\nthree!\nfour\n"},
		{"timestamps once per joined line", Options{Timestamps: true},
			"2024-01-02T03:04:05.000000001Z one\n2024-01-02T03:04:06.000000002Z two\n2024-01-02T03:04:07.000000003Z three!\n2024-01-02T03:04:09.000000005Z four\n"},
		{"tail counts records", Options{TailLines: int64p(2)}, "e!\nfour\n"},
		{"tail 0", Options{TailLines: int64p(0)}, ""},
		{"tail beyond the file", Options{TailLines: int64p(100)}, "one\ntwo\nthree!\nfour\n"},
		{"since", Options{Since: time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC)}, "two\nthree!\nfour\n"},
		{"limit bytes cuts", Options{LimitBytes: int64p(6)}, "one\ntw"},
		{"limit bytes exact", Options{LimitBytes: int64p(4)}, "one\n"},
		{"stdout only", Options{Stream: runtimeapi.Stdout}, "one\nthree!\n"},
		{"stderr only", Options{Stream: runtimeapi.Stderr}, "two\nfour\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := ReadFile(context.Background(), path, tc.opts, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("ReadFile = %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func TestReadFileSkipsMalformedRecords(t *testing.T) {
	path := writeLog(t, "2024-01-02T03:04:05Z stdout F good 1\nnot a record\n2024-01-02T03:04:06Z stdin F wrong stream\n2024-01-02T03:04:07Z stdout F good 2\n")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	var out bytes.Buffer
	if err := ReadFile(context.Background(), path, Options{Logger: logger}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "good 1\ngood 2\n" {
		t.Fatalf("ReadFile = %q, want the good records only", out.String())
	}
	for _, want := range []string{"line 2 (offset 37)", `timestamp \"not\": not RFC 3339`, "line 3", `stream \"stdin\": must be stdout or stderr`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}
}

func TestReadFileShowsAnIncompleteLastRecord(t *testing.T) {
	path := writeLog(t, "2024-01-02T03:04:05Z stdout F done\n2024-01-02T03:04:06Z stdout F half writ")
	var out bytes.Buffer
	if err := ReadFile(context.Background(), path, Options{}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "done\nhalf writ\n" {
		t.Fatalf("ReadFile = %q", out.String())
	}
}

func TestReadFileErrors(t *testing.T) {
	if err := ReadFile(context.Background(), filepath.Join(t.TempDir(), "missing.log"), Options{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "missing.log") {
		t.Fatalf("ReadFile of a missing file = %v, want an error naming it", err)
	}
	path := writeLog(t, sample)
	if err := ReadFile(context.Background(), path, Options{TailLines: int64p(-1)}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "TailLines") {
		t.Fatalf("negative TailLines = %v", err)
	}
	if err := ReadFile(context.Background(), path, Options{LimitBytes: int64p(0)}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "LimitBytes") {
		t.Fatalf("zero LimitBytes = %v", err)
	}
}

func TestOptionsFromPodLogOptions(t *testing.T) {
	now := time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC)
	stderr := v1.LogStreamStderr
	later := metav1.NewTime(now.Add(-10 * time.Second))
	o := OptionsFromPodLogOptions(&v1.PodLogOptions{
		Follow: true, Timestamps: true, TailLines: int64p(5), LimitBytes: int64p(100),
		SinceSeconds: int64p(60), SinceTime: &later, Stream: &stderr,
	}, now)
	if !o.Follow || !o.Timestamps || *o.TailLines != 5 || *o.LimitBytes != 100 || !o.Since.Equal(later.Time) || o.Stream != runtimeapi.Stderr {
		t.Fatalf("OptionsFromPodLogOptions = %+v", o)
	}
	o = OptionsFromPodLogOptions(&v1.PodLogOptions{SinceSeconds: int64p(60)}, now)
	if !o.Since.Equal(now.Add(-time.Minute)) || o.Stream != "" {
		t.Fatalf("SinceSeconds 60 gave %+v", o)
	}
}

// waitFor polls until the output equals want, with a deadline.
func waitFor(t *testing.T, out *syncbuf.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for out.String() != want {
		if time.Now().After(deadline) {
			t.Fatalf("output = %q, want %q", out.String(), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// follow runs ReadFile with Follow in the background; wait returns its error.
func follow(t *testing.T, path string, opts Options) (out *syncbuf.Buffer, cancel context.CancelFunc, wait func() error) {
	t.Helper()
	opts.Follow = true
	opts.PollInterval = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncbuf.Buffer{}
	finished := make(chan struct{})
	var err error
	go func() {
		defer close(finished)
		err = ReadFile(ctx, path, opts, out)
	}()
	wait = func() error {
		<-finished
		return err
	}
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return out, cancel, wait
}

func TestFollowSeesAppendedRecords(t *testing.T) {
	path := writeLog(t, "2024-01-02T03:04:05Z stdout F first\n")
	out, cancel, wait := follow(t, path, Options{})
	waitFor(t, out, "first\n")
	// A record written in two pieces is read once complete.
	appendTo(t, path, "2024-01-02T03:04:06Z stdout F sec")
	appendTo(t, path, "ond\n2024-01-02T03:04:07Z stdout P thi")
	appendTo(t, path, "\n2024-01-02T03:04:08Z stdout F rd\n")
	waitFor(t, out, "first\nsecond\nthird\n")
	cancel()
	if err := wait(); err != context.Canceled {
		t.Fatalf("ReadFile after cancel = %v, want context.Canceled", err)
	}
}

func TestFollowStopsWhenTheContainerStops(t *testing.T) {
	path := writeLog(t, "2024-01-02T03:04:05Z stdout F first\n")
	var mu sync.Mutex
	running := true
	out, _, wait := follow(t, path, Options{Running: func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return running, nil
	}})
	waitFor(t, out, "first\n")
	appendTo(t, path, "2024-01-02T03:04:06Z stdout F last words\n")
	mu.Lock()
	running = false
	mu.Unlock()
	if err := wait(); err != nil {
		t.Fatalf("ReadFile after the container stopped = %v, want nil", err)
	}
	if out.String() != "first\nlast words\n" {
		t.Fatalf("output = %q, want every record up to the stop", out.String())
	}
}

func TestFollowAcrossRotation(t *testing.T) {
	path := writeLog(t, "2024-01-02T03:04:05Z stdout F before\n")
	out, _, _ := follow(t, path, Options{})
	waitFor(t, out, "before\n")
	appendTo(t, path, "2024-01-02T03:04:06Z stdout F still old\n")
	if err := os.Rename(path, path+".20240102-030406"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("2024-01-02T03:04:07Z stdout F after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "before\nstill old\nafter\n")
}

func TestFollowAcrossTruncation(t *testing.T) {
	path := writeLog(t, "2024-01-02T03:04:05Z stdout F a fairly long first record\n")
	out, _, _ := follow(t, path, Options{})
	waitFor(t, out, "a fairly long first record\n")
	if err := os.WriteFile(path, []byte("2024-01-02T03:04:07Z stdout F new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "a fairly long first record\nnew\n")
}

func TestFollowWithTailStartsNearTheEnd(t *testing.T) {
	path := writeLog(t, sample)
	out, _, _ := follow(t, path, Options{TailLines: int64p(1)})
	waitFor(t, out, "four\n")
	appendTo(t, path, "2024-01-02T03:04:10Z stdout F five\n")
	waitFor(t, out, "four\nfive\n")
}

func TestFollowStopsWhenTheContainerStopsWithoutMoreOutput(t *testing.T) {
	path := writeLog(t, "2024-01-02T03:04:05Z stdout F only\n")
	stopped := make(chan struct{})
	out, _, wait := follow(t, path, Options{Running: func(context.Context) (bool, error) {
		select {
		case <-stopped:
			return false, nil
		default:
			return true, nil
		}
	}})
	waitFor(t, out, "only\n")
	close(stopped)
	if err := wait(); err != nil {
		t.Fatalf("ReadFile after the container stopped = %v, want nil", err)
	}
}
