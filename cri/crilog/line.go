// Package crilog reads container log files in the CRI logging format, the
// files containerd writes under /var/log/pods, and renders them as the kubelet
// does for `kubectl logs`.
//
// Each record is one line:
//
//	2016-10-06T00:17:09.669794202Z stdout F a full line
//	2016-10-06T00:17:09.669794203Z stderr P the first part of a long line
//
// a timestamp (RFC 3339 with nanoseconds), the stream, tags separated by ':'
// whose first is F (full) or P (partial: the content continues in the next
// record), one space, and the content.
package crilog

import (
	"bytes"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// timeFormatIn parses timestamps of any precision; timeFormatOut writes them
// fixed-width, as the kubelet does.
const (
	timeFormatIn  = "2006-01-02T15:04:05.999999999Z07:00"
	timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"
)

// Line is one record of a CRI log file.
type Line struct {
	// Timestamp is when the runtime read the content from the container.
	Timestamp time.Time
	// Stream is runtimeapi.Stdout or runtimeapi.Stderr.
	Stream runtimeapi.LogStreamType
	// Partial reports the P tag: the content continues in the next record.
	Partial bool
	// Content is the text, without the record's newline.
	Content []byte
}

// ParseLine parses one record, with or without its trailing newline. The
// error says what is wrong with it. Content aliases b.
func ParseLine(b []byte) (Line, error) {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	var l Line
	ts, rest, ok := bytes.Cut(b, []byte{' '})
	if !ok {
		if len(b) == 0 {
			return l, fmt.Errorf("empty line")
		}
		return l, fmt.Errorf("no stream after the timestamp %q", truncate(ts))
	}
	t, err := time.Parse(timeFormatIn, string(ts))
	if err != nil {
		return l, fmt.Errorf("timestamp %q: not RFC 3339 with nanoseconds", truncate(ts))
	}
	l.Timestamp = t
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	l.Stream = runtimeapi.LogStreamType(stream)
	if l.Stream != runtimeapi.Stdout && l.Stream != runtimeapi.Stderr {
		return l, fmt.Errorf("stream %q: must be stdout or stderr", truncate(stream))
	}
	if !ok {
		return l, fmt.Errorf("no tag after the stream")
	}
	tags, content, _ := bytes.Cut(rest, []byte{' '})
	first, _, _ := bytes.Cut(tags, []byte(runtimeapi.LogTagDelimiter))
	switch runtimeapi.LogTag(first) {
	case runtimeapi.LogTagPartial:
		l.Partial = true
	case runtimeapi.LogTagFull:
	default:
		return l, fmt.Errorf("tag %q: must start with F or P", truncate(tags))
	}
	l.Content = content
	return l, nil
}

// truncate shortens a malformed field for an error message.
func truncate(b []byte) []byte {
	if len(b) > 40 {
		return append(b[:40:40], "…"...)
	}
	return b
}

// LineError is a malformed record: its line number counted from where
// reading started (1-based), its byte offset in the file, and the problem.
type LineError struct {
	Line   int64
	Offset int64
	Err    error
}

// Error formats as "line N (offset O): problem".
func (e *LineError) Error() string {
	return fmt.Sprintf("line %d (offset %d): %v", e.Line, e.Offset, e.Err)
}

// Unwrap returns the problem.
func (e *LineError) Unwrap() error { return e.Err }
