package crilog

import (
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestParseLine(t *testing.T) {
	ts := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	for _, tc := range []struct {
		name string
		in   string
		want Line
	}{
		{"full stdout", "2016-10-06T00:17:09.669794202Z stdout F hello world\n",
			Line{ts, runtimeapi.Stdout, false, []byte("hello world")}},
		{"partial stderr", "2016-10-06T00:17:09.669794202Z stderr P part one",
			Line{ts, runtimeapi.Stderr, true, []byte("part one")}},
		{"extra tags", "2016-10-06T00:17:09.669794202Z stdout P:x:y text\n",
			Line{ts, runtimeapi.Stdout, true, []byte("text")}},
		{"content keeps its spaces", "2016-10-06T00:17:09.669794202Z stdout F  two  spaces \n",
			Line{ts, runtimeapi.Stdout, false, []byte(" two  spaces ")}},
		{"empty content", "2016-10-06T00:17:09.669794202Z stdout F \n",
			Line{ts, runtimeapi.Stdout, false, []byte{}}},
		{"no content separator", "2016-10-06T00:17:09.669794202Z stdout F\n",
			Line{ts, runtimeapi.Stdout, false, nil}},
		{"short timestamp", "2016-10-06T00:17:09Z stdout F x\n",
			Line{ts.Truncate(time.Second), runtimeapi.Stdout, false, []byte("x")}},
		{"zone offset", "2016-10-06T02:17:09.669794202+02:00 stdout F x\n",
			Line{ts, runtimeapi.Stdout, false, []byte("x")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !got.Timestamp.Equal(tc.want.Timestamp) || got.Stream != tc.want.Stream || got.Partial != tc.want.Partial || string(got.Content) != string(tc.want.Content) {
				t.Fatalf("ParseLine(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseLineMalformed(t *testing.T) {
	for _, tc := range []struct {
		in, problem string
	}{
		{"", "empty line"},
		{"\n", "empty line"},
		{"garbage", `no stream after the timestamp "garbage"`},
		{"yesterday stdout F x", `timestamp "yesterday": not RFC 3339`},
		{"2016-10-06 00:17:09 stdout F x", `timestamp "2016-10-06": not RFC 3339`},
		{"2016-10-06T00:17:09.669794202Z stdin F x", `stream "stdin": must be stdout or stderr`},
		{"2016-10-06T00:17:09.669794202Z stdout", "no tag after the stream"},
		{"2016-10-06T00:17:09.669794202Z stdout X text", `tag "X": must start with F or P`},
		{"2016-10-06T00:17:09.669794202Z stdout  text", `tag "": must start with F or P`},
		{`{"log":"docker json","stream":"stdout"}`, "not RFC 3339"},
	} {
		_, err := ParseLine([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("ParseLine(%q) = %v, want an error saying %q", tc.in, err, tc.problem)
		}
	}
}

func TestLineErrorNamesTheLine(t *testing.T) {
	_, perr := ParseLine([]byte("bad"))
	err := &LineError{Line: 7, Offset: 120, Err: perr}
	if got := err.Error(); !strings.HasPrefix(got, "line 7 (offset 120): ") {
		t.Fatalf("LineError = %q", got)
	}
}
