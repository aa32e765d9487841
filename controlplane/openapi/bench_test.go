package openapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkNew measures building both documents for DefaultResources, and
// reports their encoded sizes.
func BenchmarkNew(b *testing.B) {
	var docs *Documents
	for b.Loop() {
		var err error
		if docs, err = New(DefaultResources(), Info{Version: "v1.37.2"}); err != nil {
			b.Fatal(err)
		}
	}
	v2, v3 := docs.Sizes()
	b.ReportMetric(float64(v2), "v2-json-bytes")
	b.ReportMetric(float64(v3), "v3-json-bytes")
	b.ReportMetric(float64(len(docs.v2JSON.gzipped())), "v2-gzip-bytes")
	b.ReportMetric(float64(len(docs.v3)), "v3-documents")
}

// BenchmarkV2Protobuf measures the protobuf encoding of the v2 document,
// which the first protobuf request pays once, and reports its size.
func BenchmarkV2Protobuf(b *testing.B) {
	docs, err := New(DefaultResources(), Info{Version: "v1.37.2"})
	if err != nil {
		b.Fatal(err)
	}
	var pb []byte
	for b.Loop() {
		if pb, err = v2Protobuf(docs.v2JSON.raw); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pb)), "v2-protobuf-bytes")
}

// BenchmarkServeV3 measures serving a group-version document once encoded,
// as kubectl fetches it with its hash.
func BenchmarkServeV3(b *testing.B) {
	docs, err := New(DefaultResources(), Info{Version: "v1.37.2"})
	if err != nil {
		b.Fatal(err)
	}
	h := docs.V3Handler()
	url := v3URL("api/v1", docs.v3["api/v1"].hash)
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", mimeJSON)
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
