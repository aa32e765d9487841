package resources

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// proxyFront serves every request as the proxy subresource would, to
// backend (the location a resolver returned).
func proxyFront(t *testing.T, backend string) *httptest.Server {
	t.Helper()
	infos := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	p := &objectProxy{transport: http.DefaultTransport}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := infos.NewRequestInfo(r)
		if err != nil {
			t.Error(err)
			return
		}
		r = r.WithContext(request.WithRequestInfo(r.Context(), info))
		loc, _ := url.Parse(backend)
		if err := p.serve(w, r, loc, p.transport); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(front.Close)
	return front
}

func TestProxyServe(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case r.Header.Get("Upgrade") == "echo":
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
			_ = brw.Flush()
			line, _ := brw.ReadString('\n')
			fmt.Fprint(conn, "echo "+line)
		case r.URL.Path == "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<a href="/rewriteme">x</a>`)
		default:
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s?%s auth=%q body=%s", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), body)
		}
	}))
	defer backend.Close()
	front := proxyFront(t, backend.URL)
	prefix := front.URL + "/api/v1/namespaces/ns/pods/web:80/proxy"
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	do := func(method, url, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		resp, body := do(method, prefix+"/a/b?x=1&y=2", "payload")
		want := fmt.Sprintf(`%s /a/b?x=1&y=2 auth="" body=payload`, method)
		if resp.StatusCode != 200 || body != want {
			t.Errorf("%s: %d %q, want 200 %q", method, resp.StatusCode, body, want)
		}
	}
	if resp, _ := do("HEAD", prefix+"/a", ""); resp.StatusCode != 200 {
		t.Errorf("HEAD: %d", resp.StatusCode)
	}
	// The root without a slash redirects (GET and HEAD), as upstream.
	for _, method := range []string{"GET", "HEAD"} {
		resp, _ := do(method, prefix+"?q=1", "")
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/api/v1/namespaces/ns/pods/web:80/proxy/?q=1" {
			t.Errorf("%s root: %d Location %q", method, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if resp, body := do("POST", prefix, ""); resp.StatusCode != 200 || !strings.HasPrefix(body, "POST /? ") {
		t.Errorf("POST root: %d %q", resp.StatusCode, body)
	}
	// A backend's redirect is passed back, not followed, its location
	// rewritten under the proxy path.
	if resp, _ := do("GET", prefix+"/redirect", ""); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/api/v1/namespaces/ns/pods/web:80/proxy/elsewhere" {
		t.Errorf("redirect: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Links in HTML point back through the proxy.
	if resp, body := do("GET", prefix+"/page", ""); resp.StatusCode != 200 || !strings.Contains(body, `href="/api/v1/namespaces/ns/pods/web:80/proxy/rewriteme"`) {
		t.Errorf("html: %d %q", resp.StatusCode, body)
	}

	// Upgrades pass through.
	conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /api/v1/namespaces/ns/pods/web/proxy/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	fmt.Fprint(conn, "hello\n")
	if line, _ := br.ReadString('\n'); line != "echo hello\n" {
		t.Errorf("upgraded stream: %q", line)
	}
}

func TestProxyUnreachableIs503(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	front := proxyFront(t, "http://"+addr)
	resp, err := http.Get(front.URL + "/api/v1/namespaces/ns/pods/web/proxy/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || st.Code != 503 || !strings.HasPrefix(st.Message, "error trying to reach service: ") {
		t.Errorf("%d %+v, want 503 error trying to reach service", resp.StatusCode, st)
	}
}
