package ingress

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"time"

	"berth/ingress/routes"
)

// proxy is the HTTP handler of both listeners: it routes each request by
// the table current when the request arrives.
type proxy struct {
	table   func() *routes.Table
	reverse *httputil.ReverseProxy
	log     *slog.Logger
}

// target is where one request goes, passed from ServeHTTP to the rewrite.
type target struct {
	addr string // host:port of the endpoint
	path string // the cleaned path
}

type targetKey struct{}

// newProxy returns the handler routing by the table table returns (called
// once per request).
func newProxy(table func() *routes.Table, log *slog.Logger) *proxy {
	p := &proxy{table: table, log: log}
	p.reverse = &httputil.ReverseProxy{
		Rewrite:      rewrite,
		Transport:    newTransport(),
		ErrorHandler: p.backendError,
	}
	return p
}

// newTransport is the transport to the endpoints: plain HTTP/1.1 (so
// upgrades pass through), kept-alive connections.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// ServeHTTP routes a request: 404 when no rule matches, 503 when the
// backend has no ready endpoint, else proxied to the next endpoint.
func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	reqPath := routes.CleanPath(r.URL.Path)
	b, ok := p.table().Route(host, reqPath)
	if !ok {
		http.NotFound(w, r)
		return
	}
	addr, ok := b.Pick()
	if !ok {
		p.log.Debug("no endpoint for a request", "host", host, "path", reqPath, "backend", b.Name, "reason", b.Reason)
		http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
		return
	}
	ctx := context.WithValue(r.Context(), targetKey{}, target{addr: addr, path: reqPath})
	p.reverse.ServeHTTP(w, r.WithContext(ctx))
}

// rewrite points the outbound request at the chosen endpoint, keeps the
// Host header, and sets X-Forwarded-For/-Host/-Proto afresh (the inbound
// ones were dropped: a client cannot forge them).
func rewrite(pr *httputil.ProxyRequest) {
	t := pr.In.Context().Value(targetKey{}).(target)
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = t.addr
	if t.path != pr.In.URL.Path {
		pr.Out.URL.Path, pr.Out.URL.RawPath = t.path, ""
	}
	pr.Out.Host = pr.In.Host
	pr.SetXForwarded()
}

// backendError answers 502 when the endpoint cannot be reached or fails
// mid-response.
func (p *proxy) backendError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return // the client went away
	}
	t, _ := r.Context().Value(targetKey{}).(target)
	p.log.Info("backend error", "host", r.Host, "path", r.URL.Path, "endpoint", t.addr, "err", err)
	http.Error(w, http.StatusText(http.StatusBadGateway), http.StatusBadGateway)
}
