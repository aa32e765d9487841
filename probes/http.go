package probes

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
	"berth/internal/version"
)

// HTTP request purposes: they name the User-Agent, "kube-<purpose>/<major.minor>".
const (
	// PurposeProbe marks a probe's request (User-Agent kube-probe/MAJOR.MINOR of the Kubernetes release).
	PurposeProbe = "probe"
	// PurposeLifecycle marks a lifecycle hook's request (User-Agent kube-lifecycle/MAJOR.MINOR).
	PurposeLifecycle = "lifecycle"
)

// maxRedirects is how many same-host redirects a probe follows.
const maxRedirects = 10

// errHTTPResponseToHTTPS marks a TLS handshake answered in plain HTTP: a
// lifecycle hook then retries over HTTP, as the kubelet does.
var errHTTPResponseToHTTPS = errors.New("server gave HTTP response to HTTPS client")

// HTTPGetter performs the HTTP GETs of probes and hooks. Its transport keeps
// no idle connections (keep-alives off), uses no proxy, asks for no
// compression and does not verify TLS certificates, as the kubelet's probes
// do. One HTTPGetter serves any number of concurrent requests.
type HTTPGetter struct {
	transport *http.Transport
}

// NewHTTPGetter returns an HTTPGetter.
func NewHTTPGetter() *HTTPGetter {
	d := newDialer()
	t := &http.Transport{
		Proxy:               nil,
		DisableKeepAlives:   true,
		DisableCompression:  true,
		DialContext:         d.DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes never verify, as upstream
		TLSHandshakeTimeout: 10 * time.Second,
	}
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialTLS(ctx, d, network, addr)
	}
	return &HTTPGetter{transport: t}
}

// dialTLS connects and does the TLS handshake, reporting a server that
// answers the ClientHello in plain HTTP as errHTTPResponseToHTTPS.
func dialTLS(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	raw, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // as upstream
	if net.ParseIP(host) == nil {
		cfg.ServerName = host
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) && bytes.HasPrefix(rh.RecordHeader[:], []byte("HTTP/")) {
			return nil, fmt.Errorf("http: %w", errHTTPResponseToHTTPS)
		}
		return nil, err
	}
	return conn, nil
}

// NewHTTPRequest builds the GET an httpGet action describes: scheme (default
// HTTP), host (default podIP), port (number or the container's port name),
// path and headers. A Host header sets the request's Host; User-Agent
// defaults to kube-<purpose>/<major.minor>, Accept to */* (an empty Accept
// header removes it). As the kubelet does.
func NewHTTPRequest(action *v1.HTTPGetAction, container *v1.Container, podIP, purpose string) (*http.Request, error) {
	if action == nil {
		return nil, fmt.Errorf("httpGet: missing action: %w", errdefs.ErrInvalidArgument)
	}
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return nil, fmt.Errorf("httpGet: no host and the pod has no IP yet: %w", errdefs.ErrUnavailable)
	}
	port, err := ResolvePort(action.Port, container)
	if err != nil {
		return nil, fmt.Errorf("httpGet: %w", err)
	}
	u, err := url.Parse(action.Path)
	if err != nil {
		// A path the API accepted but url.Parse rejects is passed along as is.
		u = &url.URL{Path: action.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("httpGet %s: %w", u, err)
	}
	headers := make(http.Header, len(action.HTTPHeaders)+2)
	for _, h := range action.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", userAgent(purpose))
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// userAgent is kube-<purpose>/<major>.<minor> of the Kubernetes version berth implements.
func userAgent(purpose string) string {
	return "kube-" + purpose + "/" + version.KubernetesMinor()
}

// sameHostRedirects follows redirects only to the host of the first request
// (at most 10); a redirect elsewhere stops with the redirect response.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// Probe sends req with timeout and judges the answer as the kubelet does:
// 200–399 is Success with the body (at most 10 KiB) as the message, except a
// redirect that was not followed (to another host) which is a Warning; any
// other status is a Failure "HTTP probe failed with statuscode: N" (the body
// is never shown); a connection error or timeout is a Failure with the error
// as the message.
func (g *HTTPGetter) Probe(ctx context.Context, req *http.Request, timeout time.Duration) (Result, string, error) {
	client := &http.Client{Transport: g.transport, Timeout: timeout, CheckRedirect: sameHostRedirects}
	res, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return Failure, err.Error(), nil
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxOutputLength))
	if err != nil {
		return Failure, "", fmt.Errorf("httpGet %s: reading the response: %w", req.URL, err)
	}
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return Warning, "Probe terminated redirects, Response body: " + string(body), nil
		}
		return Success, string(body), nil
	}
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}

// Hook sends a lifecycle hook's req under ctx (no other timeout). As the
// kubelet does, the status code is not judged: only a request that fails is
// an error. An HTTPS request answered in plain HTTP is retried once over HTTP
// without the Authorization header; fellBack reports that it happened and the
// retry succeeded.
func (g *HTTPGetter) Hook(ctx context.Context, req *http.Request) (fellBack bool, err error) {
	client := &http.Client{Transport: g.transport, CheckRedirect: sameHostRedirects}
	res, err := client.Do(req.WithContext(ctx))
	drain(res)
	if err == nil || !errors.Is(err, errHTTPResponseToHTTPS) {
		return false, err
	}
	retry := req.Clone(ctx)
	retry.URL.Scheme = "http"
	retry.Header.Del("Authorization")
	res, retryErr := client.Do(retry)
	drain(res)
	if retryErr != nil {
		return false, err
	}
	return true, nil
}

// drain reads and closes a hook's response body (at most 10 KiB).
func drain(res *http.Response) {
	if res == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxOutputLength))
	_ = res.Body.Close()
}
