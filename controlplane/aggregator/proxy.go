package aggregator

import (
	"bufio"
	"net"
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	apiserverproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	"k8s.io/kube-aggregator/pkg/controllers/status/remote"
)

// cachedTransport is the transport built for one version of an APIService.
type cachedTransport struct {
	resourceVersion string
	rt              http.RoundTripper
	err             error
}

// Proxy returns the handler of gv when a service-backed APIService serves
// it, nil otherwise. The handler takes requests already authenticated and
// authorized (the user in their context) and proxies them as
// kube-aggregator does: 503 "service unavailable" while the APIService is
// not Available or its Service has no ready endpoint; otherwise to a
// ready endpoint over TLS checked against spec.caBundle for
// NAME.NAMESPACE.svc (unless insecureSkipTLSVerify), presenting the
// front-proxy client certificate, with the caller in X-Remote-User,
// X-Remote-Uid, X-Remote-Group and X-Remote-Extra-*. Upgrades (watches
// over WebSocket, exec) and streamed responses pass through.
func (a *Aggregator) Proxy(gv schema.GroupVersion) http.Handler {
	svc := a.apiService(gv)
	if svc == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serveProxy(w, r, svc) })
}

func (a *Aggregator) serveProxy(w http.ResponseWriter, r *http.Request, svc *apiregistrationv1.APIService) {
	if !helper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available) {
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	rt, err := a.transport(svc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	user, ok := genericapirequest.UserFrom(r.Context())
	if !ok {
		http.Error(w, "missing user", http.StatusInternalServerError)
		return
	}
	ref := svc.Spec.Service
	endpoint, err := resolver{a}.ResolveEndpoint(ref.Namespace, ref.Name, *ref.Port)
	if err != nil {
		a.log.Info("aggregator: resolving an APIService's endpoint", "apiservice", svc.Name, "err", err)
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	location := &url.URL{Scheme: "https", Host: endpoint.Host, Path: r.URL.Path, RawQuery: r.URL.Query().Encode()}
	out, cancel := apiserverproxy.NewRequestForProxy(location, r)
	defer cancel()
	uid := ""
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.RemoteRequestHeaderUID) {
		uid = user.GetUID()
	}
	upgrade := httpstream.IsUpgradeRequest(r)
	if upgrade {
		// An upgrade dials directly, without the round tripper: the
		// headers go on the request itself.
		transport.SetAuthProxyHeaders(out, user.GetName(), uid, user.GetGroups(), user.GetExtra())
	}
	rt = transport.NewAuthProxyRoundTripper(user.GetName(), uid, user.GetGroups(), user.GetExtra(), rt)
	h := proxy.NewUpgradeAwareHandler(location, rt, true, upgrade, errorResponder{})
	h.ServeHTTP(hijackableWriter{w}, out)
}

// transport is the APIService's round tripper, built once per version of
// the object.
func (a *Aggregator) transport(svc *apiregistrationv1.APIService) (http.RoundTripper, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.transports[svc.Name]; ok && c.resourceVersion == svc.ResourceVersion {
		return c.rt, c.err
	}
	rt, err := transport.New(remote.BuildTransportConfig(nil, a.cfg.FrontProxyClientCertPEM, a.cfg.FrontProxyClientKeyPEM, svc))
	a.transports[svc.Name] = cachedTransport{resourceVersion: svc.ResourceVersion, rt: rt, err: err}
	return rt, err
}

// errorResponder answers a backend that cannot be reached with 503, as
// kube-aggregator's responder.
type errorResponder struct{}

func (errorResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	http.Error(w, err.Error(), http.StatusServiceUnavailable)
}

// hijackableWriter gives UpgradeAwareHandler, which asserts http.Hijacker
// and http.Flusher, the wrapped writer's connection.
type hijackableWriter struct{ http.ResponseWriter }

func (w hijackableWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w hijackableWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w hijackableWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
