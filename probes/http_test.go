package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/internal/version"
)

// hostPort splits a test server's URL.
func hostPort(t testing.TB, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	p, _ := strconv.Atoi(port)
	return host, p
}

func TestHTTPProbe(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "other host")
	}))
	defer other.Close()
	_, otherPort := hostPort(t, other.URL)
	var lastReq atomic.Pointer[http.Request]
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "fine") })
	mux.HandleFunc("/created", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(299) })
	mux.HandleFunc("/notfound", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "secret body", 404) })
	mux.HandleFunc("/error", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "secret body", 500) })
	mux.HandleFunc("/redirect-local", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/redirect-local-bad", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/error", http.StatusFound) })
	mux.HandleFunc("/redirect-other", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/", otherPort), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, strings.Repeat("b", 20<<10)) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		lastReq.Store(r)
		fmt.Fprint(w, r.URL.RawQuery)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	host, port := hostPort(t, srv.URL)
	_, tlsPort := hostPort(t, tlsSrv.URL)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	_, closedPort := hostPort(t, "http://"+closed.Addr().String())
	closed.Close()

	container := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	g := NewHTTPGetter()
	tests := []struct {
		name    string
		action  v1.HTTPGetAction
		timeout time.Duration
		want    Result
		wantOut string // exact, or prefix when it ends in "…"
	}{
		{"200 is success with the body", v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(port))}, time.Second, Success, "fine"},
		{"299 is success", v1.HTTPGetAction{Path: "/created", Port: intstr.FromInt32(int32(port))}, time.Second, Success, ""},
		{"404 is failure without the body", v1.HTTPGetAction{Path: "/notfound", Port: intstr.FromInt32(int32(port))}, time.Second, Failure, "HTTP probe failed with statuscode: 404"},
		{"500 is failure", v1.HTTPGetAction{Path: "/error", Port: intstr.FromInt32(int32(port))}, time.Second, Failure, "HTTP probe failed with statuscode: 500"},
		{"named port", v1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("http")}, time.Second, Success, "fine"},
		{"number as a string", v1.HTTPGetAction{Path: "/ok", Port: intstr.FromString(strconv.Itoa(port))}, time.Second, Success, "fine"},
		{"same-host redirect is followed", v1.HTTPGetAction{Path: "/redirect-local", Port: intstr.FromInt32(int32(port))}, time.Second, Success, "fine"},
		{"same-host redirect to an error fails", v1.HTTPGetAction{Path: "/redirect-local-bad", Port: intstr.FromInt32(int32(port))}, time.Second, Failure, "HTTP probe failed with statuscode: 500"},
		{"redirect to another host is a warning", v1.HTTPGetAction{Path: "/redirect-other", Port: intstr.FromInt32(int32(port))}, time.Second, Warning, "Probe terminated redirects, Response body: …"},
		{"redirect loop stops after 10", v1.HTTPGetAction{Path: "/loop", Port: intstr.FromInt32(int32(port))}, time.Second, Failure, "Get \"/loop\": stopped after 10 redirects"},
		{"body cut at 10 KiB", v1.HTTPGetAction{Path: "/big", Port: intstr.FromInt32(int32(port))}, time.Second, Success, strings.Repeat("b", 10<<10)},
		{"timeout is failure", v1.HTTPGetAction{Path: "/slow", Port: intstr.FromInt32(int32(port))}, 200 * time.Millisecond, Failure, "Get \"http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/slow\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"},
		{"refused is failure", v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(closedPort))}, time.Second, Failure, "Get \"http://" + net.JoinHostPort(host, strconv.Itoa(closedPort)) + "/\": dial tcp " + net.JoinHostPort(host, strconv.Itoa(closedPort)) + ": connect: connection refused"},
		{"https without verification", v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(tlsPort)), Scheme: v1.URISchemeHTTPS}, time.Second, Success, "fine"},
		{"query string kept", v1.HTTPGetAction{Path: "/echo?a=1&b=2", Port: intstr.FromInt32(int32(port))}, time.Second, Success, "a=1&b=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := NewHTTPRequest(&tt.action, container, host, PurposeProbe)
			if err != nil {
				t.Fatalf("NewHTTPRequest: %v", err)
			}
			res, out, err := g.Probe(context.Background(), req, tt.timeout)
			if err != nil {
				t.Fatalf("Probe error: %v", err)
			}
			if res != tt.want {
				t.Errorf("result = %q, want %q (message %q)", res, tt.want, out)
			}
			if p, ok := strings.CutSuffix(tt.wantOut, "…"); ok {
				if !strings.HasPrefix(out, p) {
					t.Errorf("message = %q, want prefix %q", out, p)
				}
			} else if out != tt.wantOut {
				t.Errorf("message = %q, want %q", short(out), short(tt.wantOut))
			}
		})
	}

	t.Run("headers", func(t *testing.T) {
		tests := []struct {
			name                      string
			headers                   []v1.HTTPHeader
			wantHost, wantUA, wantAcc string
			wantCustom                []string
		}{
			{"defaults", nil, net.JoinHostPort(host, strconv.Itoa(port)), "kube-probe/" + version.KubernetesMinor(), "*/*", nil},
			{"Host overrides", []v1.HTTPHeader{{Name: "Host", Value: "example.test"}}, "example.test", "kube-probe/" + version.KubernetesMinor(), "*/*", nil},
			{"User-Agent overrides", []v1.HTTPHeader{{Name: "user-agent", Value: "mine/1"}}, net.JoinHostPort(host, strconv.Itoa(port)), "mine/1", "*/*", nil},
			{"empty Accept removes it", []v1.HTTPHeader{{Name: "Accept", Value: ""}}, net.JoinHostPort(host, strconv.Itoa(port)), "kube-probe/" + version.KubernetesMinor(), "", nil},
			{"repeated custom header", []v1.HTTPHeader{{Name: "X-Custom", Value: "a"}, {Name: "X-Custom", Value: "b"}}, net.JoinHostPort(host, strconv.Itoa(port)), "kube-probe/" + version.KubernetesMinor(), "*/*", []string{"a", "b"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				action := v1.HTTPGetAction{Path: "/echo", Port: intstr.FromInt32(int32(port)), HTTPHeaders: tt.headers}
				req, err := NewHTTPRequest(&action, container, host, PurposeProbe)
				if err != nil {
					t.Fatal(err)
				}
				if res, out, err := g.Probe(context.Background(), req, time.Second); res != Success || err != nil {
					t.Fatalf("probe = %q %q %v", res, out, err)
				}
				got := lastReq.Load()
				if got.Host != tt.wantHost {
					t.Errorf("Host = %q, want %q", got.Host, tt.wantHost)
				}
				if ua := got.Header.Get("User-Agent"); ua != tt.wantUA {
					t.Errorf("User-Agent = %q, want %q", ua, tt.wantUA)
				}
				if acc := got.Header.Get("Accept"); acc != tt.wantAcc {
					t.Errorf("Accept = %q, want %q", acc, tt.wantAcc)
				}
				if enc := got.Header.Get("Accept-Encoding"); enc != "" {
					t.Errorf("Accept-Encoding = %q, want none (compression off)", enc)
				}
				if c := got.Header.Values("X-Custom"); strings.Join(c, ",") != strings.Join(tt.wantCustom, ",") {
					t.Errorf("X-Custom = %q, want %q", c, tt.wantCustom)
				}
				if got.Close != true {
					t.Errorf("request did not ask to close the connection (keep-alives must be off)")
				}
			})
		}
	})
}

func TestNewHTTPRequest(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
	tests := []struct {
		name    string
		action  v1.HTTPGetAction
		podIP   string
		wantURL string
		wantErr string
	}{
		{"pod IP and scheme default", v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}, "10.0.0.5", "http://10.0.0.5:80/healthz", ""},
		{"host given", v1.HTTPGetAction{Host: "10.1.1.1", Path: "/", Port: intstr.FromInt32(81)}, "10.0.0.5", "http://10.1.1.1:81/", ""},
		{"https lower-cased", v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Port: intstr.FromString("web")}, "10.0.0.5", "https://10.0.0.5:8080", ""},
		{"ipv6 pod IP", v1.HTTPGetAction{Path: "/x", Port: intstr.FromInt32(80)}, "fd00::5", "http://[fd00::5]:80/x", ""},
		{"unknown port name", v1.HTTPGetAction{Port: intstr.FromString("nope")}, "10.0.0.5", "", `port "nope": no container port has that name`},
		{"port out of range", v1.HTTPGetAction{Port: intstr.FromInt32(70000)}, "10.0.0.5", "", "invalid port number: 70000"},
		{"no host at all", v1.HTTPGetAction{Port: intstr.FromInt32(80)}, "", "", "no host and the pod has no IP yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := NewHTTPRequest(&tt.action, c, tt.podIP, PurposeProbe)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tt.wantURL {
				t.Errorf("URL = %q, want %q", req.URL, tt.wantURL)
			}
		})
	}
}
