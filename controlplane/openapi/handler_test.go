package openapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
)

// get sends a GET with the given headers, without transparent gzip, and
// does not follow redirects.
func get(t *testing.T, srv *httptest.Server, path string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func body(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestV2Handler(t *testing.T) {
	docs := newDefaultDocuments(t)
	srv := httptest.NewServer(docs.Handler())
	t.Cleanup(srv.Close)

	resp := get(t, srv, PathV2, nil)
	data := body(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != mimeJSON {
		t.Fatalf("no Accept: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil || doc["swagger"] != "2.0" {
		t.Fatalf("JSON document: %v, swagger=%v", err, doc["swagger"])
	}
	etag := resp.Header.Get("Etag")
	if etag != strconv.Quote(docs.v2ETag) {
		t.Errorf("ETag %s, want the quoted content hash", etag)
	}

	for _, accept := range []string{mimeV2ProtobufDeprecated, mimeV2Protobuf, "application/json;q=0.5, " + mimeV2Protobuf} {
		resp := get(t, srv, PathV2, map[string]string{"Accept": accept})
		data := body(t, resp)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != mimeV2Protobuf {
			t.Fatalf("Accept %s: %d %s", accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var pb openapi_v2.Document
		if err := proto.Unmarshal(data, &pb); err != nil {
			t.Fatalf("Accept %s: protobuf: %v", accept, err)
		}
		if pb.GetSwagger() != "2.0" || len(pb.GetDefinitions().GetAdditionalProperties()) != len(docs.v2.Definitions) {
			t.Errorf("Accept %s: protobuf document has swagger %q and %d definitions", accept, pb.GetSwagger(), len(pb.GetDefinitions().GetAdditionalProperties()))
		}
		if resp.Header.Get("Etag") != etag || !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept") {
			t.Errorf("Accept %s: ETag %s Vary %v", accept, resp.Header.Get("Etag"), resp.Header.Values("Vary"))
		}
	}

	if resp := get(t, srv, PathV2, map[string]string{"Accept": "text/html"}); resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("Accept text/html: %d, want 406", resp.StatusCode)
	}
	if resp := get(t, srv, PathV2, map[string]string{"Accept": "text/html, */*;q=0.1"}); resp.Header.Get("Content-Type") != mimeJSON {
		t.Errorf("Accept text/html, */*: %s, want JSON", resp.Header.Get("Content-Type"))
	}
	if resp := get(t, srv, PathV2, map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", resp.StatusCode)
	}

	resp = get(t, srv, PathV2, map[string]string{"Accept-Encoding": "gzip"})
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Accept-Encoding gzip: Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body(t, resp)))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, data) {
		t.Errorf("gzip body does not decompress to the JSON document (err %v)", err)
	}

	req, _ := http.NewRequest(http.MethodPost, srv.URL+PathV2, nil)
	postResp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	postResp.Body.Close()
	if postResp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", postResp.StatusCode)
	}
	if resp := get(t, srv, "/openapi/v4", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/openapi/v4: %d, want 404", resp.StatusCode)
	}
}

func TestV3Handler(t *testing.T) {
	docs := newDefaultDocuments(t)
	srv := httptest.NewServer(docs.Handler())
	t.Cleanup(srv.Close)

	resp := get(t, srv, PathV3, nil)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body(t, resp), &index); err != nil {
		t.Fatalf("index: %v", err)
	}
	served := []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1", "apis/events.k8s.io/v1",
		"apis/discovery.k8s.io/v1", "apis/storage.k8s.io/v1", "apis/rbac.authorization.k8s.io/v1",
		"apis/admissionregistration.k8s.io/v1", "apis/certificates.k8s.io/v1", "apis/authentication.k8s.io/v1", "apis/node.k8s.io/v1",
		"apis/networking.k8s.io/v1", "apis/batch/v1", "apis/scheduling.k8s.io/v1", "apis/policy/v1",
		"apis/flowcontrol.apiserver.k8s.io/v1", "apis/autoscaling/v2", "apis/autoscaling/v1"}
	for _, gv := range served {
		entry, ok := index.Paths[gv]
		if !ok {
			t.Errorf("index lacks %s", gv)
			continue
		}
		u, err := url.Parse(entry.ServerRelativeURL)
		if err != nil || u.Path != PathV3+"/"+gv || u.Query().Get("hash") != docs.v3[gv].hash {
			t.Errorf("%s: serverRelativeURL %q", gv, entry.ServerRelativeURL)
		}
	}
	if len(index.Paths) != len(served) {
		t.Errorf("index has %d group-versions, want %d", len(index.Paths), len(served))
	}

	current := index.Paths["apis/apps/v1"].ServerRelativeURL
	resp = get(t, srv, current, map[string]string{"Accept": mimeJSON})
	data := body(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, immutable" || resp.Header.Get("Expires") == "" {
		t.Errorf("current hash: %d Cache-Control %q Expires %q", resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"))
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil || doc["openapi"] != "3.0.0" {
		t.Fatalf("apps/v1 document: %v (openapi %v)", err, doc["openapi"])
	}

	resp = get(t, srv, PathV3+"/apis/apps/v1?hash=0123", map[string]string{"Accept": mimeJSON})
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != current {
		t.Errorf("stale hash: %d Location %q, want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), current)
	}

	resp = get(t, srv, PathV3+"/apis/apps/v1", nil)
	body(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "" {
		t.Errorf("no hash: %d Cache-Control %q, want 200 without caching headers", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	if resp.Header.Get("Etag") != strconv.Quote(docs.v3["apis/apps/v1"].hash) {
		t.Errorf("no hash: ETag %s", resp.Header.Get("Etag"))
	}

	resp = get(t, srv, PathV3+"/api/v1", map[string]string{"Accept": mimeV3ProtobufDeprecated})
	var pb openapi_v3.Document
	if err := proto.Unmarshal(body(t, resp), &pb); err != nil || resp.Header.Get("Content-Type") != mimeV3Protobuf {
		t.Fatalf("v3 protobuf: %v (%s)", err, resp.Header.Get("Content-Type"))
	}
	if pb.GetOpenapi() != "3.0.0" || len(pb.GetPaths().GetPath()) == 0 {
		t.Errorf("v3 protobuf: openapi %q with %d paths", pb.GetOpenapi(), len(pb.GetPaths().GetPath()))
	}

	if resp := get(t, srv, PathV3+"/apis/example.com/v1", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown group-version: %d, want 404", resp.StatusCode)
	}
	if resp := get(t, srv, PathV3+"/api/v1", map[string]string{"Accept": "text/html"}); resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("Accept text/html: %d, want 406", resp.StatusCode)
	}
}

func TestNegotiate(t *testing.T) {
	cases := []struct {
		accept, want string
		ok           bool
	}{
		{"", mimeJSON, true},
		{"*/*", mimeJSON, true},
		{"application/*", mimeJSON, true},
		{mimeV2ProtobufDeprecated, mimeV2Protobuf, true},
		{"application/json;q=0.2, " + mimeV2Protobuf + ";q=0.9", mimeV2Protobuf, true},
		{mimeV2Protobuf + ";q=0, application/json", mimeJSON, true},
		{"text/plain", "", false},
		{"garbage", "", false},
	}
	for _, c := range cases {
		got, ok := negotiate(c.accept, v2Offers)
		if ok != c.ok || got.contentType != c.want {
			t.Errorf("negotiate(%q) = %q, %v; want %q, %v", c.accept, got.contentType, ok, c.want, c.ok)
		}
	}
	for header, want := range map[string]bool{"gzip": true, "deflate, gzip;q=0.5": true, "gzip;q=0": false, "br": false, "": false} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v", header, got)
		}
	}
}

// TestConcurrentFirstRequests sends the first protobuf and gzip requests of
// fresh documents at once: every response must be the same complete body.
func TestConcurrentFirstRequests(t *testing.T) {
	docs := newDefaultDocuments(t)
	srv := httptest.NewServer(docs.Handler())
	t.Cleanup(srv.Close)
	const n = 8
	cases := []struct {
		path    string
		headers map[string]string
	}{
		{PathV2, map[string]string{"Accept": mimeV2ProtobufDeprecated}},
		{PathV2, map[string]string{"Accept-Encoding": "gzip"}},
		{PathV3 + "/api/v1", map[string]string{"Accept": mimeV3Protobuf}},
	}
	for _, c := range cases {
		bodies := make([][]byte, n)
		errs := make(chan error, n)
		for i := range n {
			go func() {
				req, err := http.NewRequest(http.MethodGet, srv.URL+c.path, nil)
				if err != nil {
					errs <- err
					return
				}
				for k, v := range c.headers {
					req.Header.Set(k, v)
				}
				resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				bodies[i], err = io.ReadAll(resp.Body)
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i < n; i++ {
			if len(bodies[0]) == 0 || !bytes.Equal(bodies[i], bodies[0]) {
				t.Fatalf("%s %v: response %d differs from response 0 (%d vs %d bytes)", c.path, c.headers, i, len(bodies[i]), len(bodies[0]))
			}
		}
	}
}
