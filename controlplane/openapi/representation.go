package openapi

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// representation is one encoding of a document with its gzip form, which is
// made on first use and kept.
type representation struct {
	raw    []byte
	gzOnce sync.Once
	gz     []byte
}

func newRepresentation(raw []byte) *representation { return &representation{raw: raw} }

func (r *representation) gzipped() []byte {
	r.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // the level is valid
		// Writes to a bytes.Buffer do not fail.
		_, _ = zw.Write(r.raw)
		_ = zw.Close()
		r.gz = buf.Bytes()
	})
	return r.gz
}

// lazyRepresentation is an encoding made from another on first use (the
// protobuf forms), remembering a failure as well as a success.
type lazyRepresentation struct {
	once   sync.Once
	encode func() ([]byte, error)
	rep    *representation
	err    error
}

func (l *lazyRepresentation) get() (*representation, error) {
	l.once.Do(func() {
		raw, err := l.encode()
		if err != nil {
			l.err = err
			return
		}
		l.rep = newRepresentation(raw)
	})
	return l.rep, l.err
}

// serve writes rep with its ETag, honouring If-None-Match and gzip.
func serve(w http.ResponseWriter, r *http.Request, contentType, etag string, rep *representation) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Etag", strconv.Quote(etag))
	h.Add("Vary", "Accept-Encoding")
	body := rep.raw
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = rep.gzipped()
		h.Set("Content-Encoding", "gzip")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(header string) bool {
	for _, clause := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(clause), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		return qValue(params) > 0
	}
	return false
}

// mediaOffer is a media type a handler can produce.
type mediaOffer struct {
	// accept is the type/subtype a client asks for.
	accept string
	// contentType is what the response is labelled with.
	contentType string
}

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	typ, subtype string
	q            float64
}

// negotiate picks the offer an Accept header prefers: the first offer
// matching the highest-quality media range ("*/*" and "type/*" included).
// An empty header accepts anything.
func negotiate(header string, offers []mediaOffer) (mediaOffer, bool) {
	if strings.TrimSpace(header) == "" {
		header = "*/*"
	}
	var clauses []acceptClause
	for _, raw := range strings.Split(header, ",") {
		mediaRange, params, _ := strings.Cut(strings.TrimSpace(raw), ";")
		typ, subtype, ok := strings.Cut(strings.ToLower(strings.TrimSpace(mediaRange)), "/")
		if !ok {
			continue
		}
		if q := qValue(params); q > 0 {
			clauses = append(clauses, acceptClause{typ: typ, subtype: subtype, q: q})
		}
	}
	// Stable: equal qualities keep the client's order.
	slices.SortStableFunc(clauses, func(a, b acceptClause) int { return cmp.Compare(b.q, a.q) })
	for _, c := range clauses {
		for _, o := range offers {
			typ, subtype, _ := strings.Cut(o.accept, "/")
			if (c.typ == "*" || c.typ == typ) && (c.subtype == "*" || c.subtype == subtype) {
				return o, true
			}
		}
	}
	return mediaOffer{}, false
}

// qValue reads the q parameter of a clause's parameters; 1 when absent or
// malformed.
func qValue(params string) float64 {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || strings.TrimSpace(k) != "q" {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 1
		}
		return q
	}
	return 1
}
