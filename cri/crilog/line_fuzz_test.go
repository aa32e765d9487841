package crilog

import (
	"bytes"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FuzzParseLine feeds arbitrary records to ParseLine. A record it accepts
// is re-written in the canonical form (fixed-width timestamp, the stream,
// F or P, the content) and must parse back to the same Line; a rejected
// record must say why.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"2016-10-06T00:17:09.669794202Z stdout F a full line\n",
		"2016-10-06T00:17:09.669794203Z stderr P the first part",
		"2016-10-06T00:17:09Z stdout F:x:y tagged",
		"2016-10-06T00:17:09.1+02:00 stdout F ",
		"2016-10-06T00:17:09.669794202Z stdout F",
		"2016-10-06T00:17:09.669794202Z stdin F x",
		"not-a-time stdout F x",
		"",
		"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLine(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseLine(%q): empty error", b)
			}
			return
		}
		if l.Stream != runtimeapi.Stdout && l.Stream != runtimeapi.Stderr {
			t.Fatalf("ParseLine(%q): accepted stream %q", b, l.Stream)
		}
		if !bytes.HasSuffix(bytes.TrimSuffix(b, []byte{'\n'}), l.Content) {
			t.Fatalf("ParseLine(%q): content %q is not the end of the record", b, l.Content)
		}
		tag := runtimeapi.LogTagFull
		if l.Partial {
			tag = runtimeapi.LogTagPartial
		}
		var canon []byte
		canon = l.Timestamp.AppendFormat(canon, timeFormatOut)
		canon = append(canon, ' ')
		canon = append(canon, l.Stream...)
		canon = append(canon, ' ')
		canon = append(canon, tag...)
		canon = append(canon, ' ')
		canon = append(canon, l.Content...)
		again, err := ParseLine(canon)
		if err != nil {
			t.Fatalf("ParseLine(%q) = %+v, but its canonical form %q does not parse: %v", b, l, canon, err)
		}
		if !again.Timestamp.Equal(l.Timestamp) || again.Stream != l.Stream || again.Partial != l.Partial || !bytes.Equal(again.Content, l.Content) {
			t.Fatalf("round trip of %q: %+v, then %q parsed as %+v", b, l, canon, again)
		}
	})
}
