package resources

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// Regression: a log whose last read also reported the end came over the
// WebSocket empty.
func TestDataBeforeEOF(t *testing.T) {
	r := &dataBeforeEOF{r: iotest.DataErrReader(strings.NewReader("log line\n"))}
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if n != 9 || err != nil {
		t.Fatalf("first read: %d %v, want 9 <nil>", n, err)
	}
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("second read: %d %v, want 0 EOF", n, err)
	}
	if err := iotest.TestReader(&dataBeforeEOF{r: strings.NewReader("abcdef")}, []byte("abcdef")); err != nil {
		t.Fatal(err)
	}
}

func TestCheckSubprotocols(t *testing.T) {
	supported := wsstream.NewDefaultReaderProtocols()
	for _, tc := range []struct {
		offered []string
		ok      bool
	}{
		{nil, true},
		{[]string{"binary.k8s.io"}, true},
		{[]string{"v4.channel.k8s.io, base64.binary.k8s.io"}, true},
		{[]string{"v4.channel.k8s.io"}, false},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		for _, p := range tc.offered {
			r.Header.Add("Sec-Websocket-Protocol", p)
		}
		err := checkSubprotocols(r, supported)
		if tc.ok != (err == nil) || (err != nil && !apierrors.IsBadRequest(err)) {
			t.Errorf("%v: %v", tc.offered, err)
		}
	}
}
