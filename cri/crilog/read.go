package crilog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultPollInterval is how often a followed file is checked for new content.
const DefaultPollInterval = 250 * time.Millisecond

// Options select and shape what ReadFile writes, as v1.PodLogOptions do.
type Options struct {
	// TailLines, when set, starts that many records before the end of the
	// file (records, as the kubelet counts: a partial record is one).
	TailLines *int64
	// LimitBytes, when set, stops after writing that many bytes.
	LimitBytes *int64
	// Since skips records older than this time (zero: none skipped).
	Since time.Time
	// Timestamps prefixes each output line with its record's timestamp
	// (RFC 3339, nanoseconds, fixed width) and a space.
	Timestamps bool
	// Stream keeps only one stream: runtimeapi.Stdout or runtimeapi.Stderr
	// ("" keeps both).
	Stream runtimeapi.LogStreamType
	// Follow keeps reading as the file grows, until ctx ends or Running says
	// the container stopped. A file replaced by rotation (a new inode at the
	// path) is followed into; a file truncated in place is read from its start.
	Follow bool
	// Running, if set, is asked at the end of the file while following;
	// false ends the read once the rest of the file is written.
	Running func(ctx context.Context) (bool, error)
	// PollInterval is how often a followed file is checked; default 250ms.
	PollInterval time.Duration
	// Logger receives a warning for each malformed record skipped; nil: none.
	Logger *slog.Logger
}

// OptionsFromPodLogOptions converts the API's log options, resolving
// SinceSeconds against now (the later of SinceSeconds and SinceTime wins).
func OptionsFromPodLogOptions(o *v1.PodLogOptions, now time.Time) Options {
	opts := Options{TailLines: o.TailLines, LimitBytes: o.LimitBytes, Timestamps: o.Timestamps, Follow: o.Follow}
	if o.SinceSeconds != nil {
		opts.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	}
	if o.SinceTime != nil && o.SinceTime.After(opts.Since) {
		opts.Since = o.SinceTime.Time
	}
	if o.Stream != nil {
		switch *o.Stream {
		case v1.LogStreamStdout:
			opts.Stream = runtimeapi.Stdout
		case v1.LogStreamStderr:
			opts.Stream = runtimeapi.Stderr
		}
	}
	return opts
}

// errLimitReached ends reading when LimitBytes have been written.
var errLimitReached = errors.New("byte limit reached")

// ReadFile writes the log at path to w as the kubelet serves `kubectl logs`:
// the content of each record, partial records joined into one line, with
// timestamps when asked. Malformed records are skipped (and logged), as the
// kubelet does. With Follow it returns ctx.Err() when ctx ends.
func ReadFile(ctx context.Context, path string, opts Options, w io.Writer) error {
	if opts.TailLines != nil && *opts.TailLines < 0 {
		return fmt.Errorf("crilog: TailLines %d: must not be negative", *opts.TailLines)
	}
	if opts.LimitBytes != nil && *opts.LimitBytes <= 0 {
		return fmt.Errorf("crilog: LimitBytes %d: must be positive", *opts.LimitBytes)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("crilog: open log file: %w", err)
	}
	r := &reader{path: path, opts: opts, w: w, f: f, atLineStart: true, remain: math.MaxInt64}
	defer func() { r.f.Close() }()
	if opts.LimitBytes != nil {
		r.remain = *opts.LimitBytes
	}
	if opts.TailLines != nil {
		start, err := tailStart(f, *opts.TailLines)
		if err != nil {
			return fmt.Errorf("crilog: tail %d lines of %s: %w", *opts.TailLines, path, err)
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("crilog: seek in %s: %w", path, err)
		}
		r.offset = start
	}
	r.br = bufio.NewReaderSize(f, 64<<10)
	err = r.run(ctx)
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// reader is the state of one ReadFile.
type reader struct {
	path string
	opts Options
	w    io.Writer
	f    *os.File
	br   *bufio.Reader

	offset      int64  // file offset of the next unread byte
	pending     []byte // an incomplete record read at the end of a followed file
	lineNo      int64
	atLineStart bool // the last written content ended a line
	remain      int64
}

func (r *reader) run(ctx context.Context) error {
	limited := r.opts.TailLines != nil && !r.opts.Follow
	var left int64
	if limited {
		left = *r.opts.TailLines
	}
	stopAtEOF := false
	for {
		if limited && left == 0 {
			return nil
		}
		b, err := r.br.ReadBytes('\n')
		r.offset += int64(len(b))
		switch {
		case err == nil:
		case err != io.EOF:
			return fmt.Errorf("crilog: read %s: %w", r.path, err)
		case r.opts.Follow && !stopAtEOF:
			r.pending = append(r.pending, b...)
			stop, err := r.waitForMore(ctx)
			if err != nil {
				return err
			}
			stopAtEOF = stop
			continue
		default:
			b = append(r.pending, b...)
			r.pending = nil
			if len(b) == 0 {
				return nil
			}
			// An incomplete last record is still shown, as the kubelet does.
			stopAtEOF, limited, left = true, true, 1
		}
		if len(r.pending) > 0 {
			b = append(r.pending, b...)
			r.pending = nil
		}
		r.lineNo++
		line, perr := ParseLine(b)
		if perr != nil {
			if r.opts.Logger != nil {
				r.opts.Logger.Warn("skipping malformed CRI log record", "path", r.path,
					"error", &LineError{Line: r.lineNo, Offset: r.offset - int64(len(b)), Err: perr})
			}
			continue
		}
		if err := r.write(line); err != nil {
			return err
		}
		if limited {
			left--
		}
	}
}

// write renders one record.
func (r *reader) write(l Line) error {
	if r.opts.Stream != "" && l.Stream != r.opts.Stream {
		return nil
	}
	newLine := r.atLineStart
	r.atLineStart = !l.Partial
	if l.Timestamp.Before(r.opts.Since) {
		return nil
	}
	var out []byte
	if r.opts.Timestamps && newLine {
		out = l.Timestamp.AppendFormat(out, timeFormatOut)
		out = append(out, ' ')
	}
	out = append(out, l.Content...)
	if !l.Partial {
		out = append(out, '\n')
	}
	if int64(len(out)) > r.remain {
		out = out[:r.remain]
	}
	n, err := r.w.Write(out)
	r.remain -= int64(n)
	if err != nil {
		return fmt.Errorf("crilog: write: %w", err)
	}
	if r.remain <= 0 {
		return errLimitReached
	}
	return nil
}

// waitForMore is called at the end of a followed file. It reports stop=true
// when the container is no longer running (read to the end once more, then
// stop); otherwise it polls until there is more to read (see checkRotation)
// or ctx ends.
func (r *reader) waitForMore(ctx context.Context) (stop bool, err error) {
	for {
		if more, err := r.checkRotation(); err != nil || more {
			return false, err
		}
		if r.opts.Running != nil {
			running, err := r.opts.Running(ctx)
			if err != nil {
				return false, fmt.Errorf("crilog: follow %s: %w", r.path, err)
			}
			if !running {
				return true, nil
			}
		}
		t := time.NewTimer(r.opts.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
	}
}

// checkRotation reports whether there is more to read at once: the file
// grew, or the path now names another file (rotation by rename and create:
// once the old file is read to its end, the new one is opened), or the file
// shrank (copytruncate: read again from its start).
func (r *reader) checkRotation() (bool, error) {
	cur, err := r.f.Stat()
	if err != nil {
		return false, fmt.Errorf("crilog: stat %s: %w", r.path, err)
	}
	if cur.Size() > r.offset {
		return true, nil
	}
	now, err := os.Stat(r.path)
	if err != nil {
		// Between rename and create: keep waiting.
		return false, nil
	}
	if !os.SameFile(cur, now) {
		nf, err := os.Open(r.path)
		if err != nil {
			return false, nil
		}
		r.f.Close()
		r.f, r.offset, r.pending = nf, 0, nil
		r.br.Reset(nf)
		return true, nil
	}
	if cur.Size() < r.offset {
		if _, err := r.f.Seek(0, io.SeekStart); err != nil {
			return false, fmt.Errorf("crilog: rewind %s: %w", r.path, err)
		}
		r.offset, r.pending = 0, nil
		r.br.Reset(r.f)
		return true, nil
	}
	return false, nil
}

// tailStart returns the offset of the n-th record from the end of f.
func tailStart(f *os.File, n int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if n == 0 {
		return size, nil
	}
	const chunk = 4096
	buf := make([]byte, chunk)
	var found int64
	for pos := size; pos > 0; {
		k := min(int64(chunk), pos)
		pos -= k
		if _, err := f.ReadAt(buf[:k], pos); err != nil && err != io.EOF {
			return 0, err
		}
		for i := k - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == size-1 {
				continue // not a newline, or the one ending the last record
			}
			found++
			if found == n {
				return pos + i + 1, nil
			}
		}
	}
	return 0, nil
}
