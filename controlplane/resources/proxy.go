package resources

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"berth/controlplane/apiserver"
)

// proxyVerbs are the discovery verbs of the proxy subresources (every HTTP
// method is proxied: GET and HEAD are get, POST create, PUT update, PATCH
// patch, DELETE delete).
var proxyVerbs = []string{"create", "delete", "get", "patch", "update"}

// objectProxy serves pods/proxy, services/proxy and nodes/proxy, as
// kube-apiserver: the request (any method, its query, the path after
// /proxy, upgrades) goes to the object's own address — a pod's IP, a ready
// endpoint of a Service that is one of its pods, a node's address — through
// apimachinery's UpgradeAwareHandler, which rewrites links in HTML and
// redirects, and does not follow redirects.
type objectProxy struct {
	pods, services, endpoints, nodes *genericregistry.Store
	// transport reaches pods, and nodes on ports other than the agent's:
	// TLS is not verified (IP-addressed backends), no client certificate.
	transport http.RoundTripper
	// agentTransport reaches node agents with the apiserver's client
	// certificate.
	agentTransport http.RoundTripper
}

func (p *objectProxy) pod(ctx context.Context, w http.ResponseWriter, r *http.Request, _, name string) error {
	id, err := parseProxyID("pod", name)
	if err != nil {
		return err
	}
	obj, err := p.pods.Get(ctx, id.name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	loc, err := podProxyLocation(obj.(*corev1.Pod), id)
	if err != nil {
		return err
	}
	return p.serve(w, r, loc, p.transport)
}

func (p *objectProxy) service(ctx context.Context, w http.ResponseWriter, r *http.Request, ns, name string) error {
	id, err := parseProxyID("service", name)
	if err != nil {
		return err
	}
	portName := id.port
	if n, ok := portNumber(id.port); ok {
		obj, err := p.services.Get(ctx, id.name, &metav1.GetOptions{})
		if err != nil {
			return err
		}
		if portName, err = servicePortName(obj.(*corev1.Service), n); err != nil {
			return err
		}
	}
	obj, err := p.endpoints.Get(ctx, id.name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	isPod := func(addr corev1.EndpointAddress) bool {
		return endpointIsPod(addr, ns, func(pod string) *corev1.Pod {
			obj, err := p.pods.Get(ctx, pod, &metav1.GetOptions{})
			if err != nil {
				return nil
			}
			return obj.(*corev1.Pod)
		})
	}
	loc, err := serviceProxyLocation(obj.(*corev1.Endpoints), id.scheme, portName, name, isPod, rand.IntN)
	if err != nil {
		return err
	}
	return p.serve(w, r, loc, p.transport)
}

func (p *objectProxy) node(ctx context.Context, w http.ResponseWriter, r *http.Request, _, name string) error {
	id, err := parseProxyID("node", name)
	if err != nil {
		return err
	}
	obj, err := p.nodes.Get(ctx, id.name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	loc, agent, err := nodeProxyLocation(ctx, obj.(*corev1.Node), id, lookupHost)
	if err != nil {
		return err
	}
	rt := p.transport
	if agent {
		if p.agentTransport == nil {
			return apierrors.NewServiceUnavailable("no transport to node agents is configured")
		}
		rt = p.agentTransport
	}
	return p.serve(w, r, loc, rt)
}

// serve proxies r to loc plus the path after /proxy, without the caller's
// credential.
func (p *objectProxy) serve(w http.ResponseWriter, r *http.Request, loc *url.URL, rt http.RoundTripper) error {
	if rt == nil {
		return apierrors.NewServiceUnavailable("no proxy transport is configured")
	}
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok {
		return apierrors.NewInternalError(errors.New("no request info"))
	}
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, proxySubpath(info))
	out := r.WithContext(r.Context())
	out.Header = r.Header.Clone()
	out.Header.Del("Authorization")
	h := proxy.NewUpgradeAwareHandler(loc, rt, true, false, proxyResponder{})
	h.ServeHTTP(hijackableWriter{w}, out)
	return nil
}

// proxySubpath is the path after NAME/proxy in the request ("" for none),
// with a leading slash and the request's trailing slash.
func proxySubpath(info *request.RequestInfo) string {
	if len(info.Parts) <= 3 {
		if strings.HasSuffix(info.Path, "/") {
			return "/"
		}
		return ""
	}
	p := "/" + strings.Join(info.Parts[3:], "/")
	if strings.HasSuffix(info.Path, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// proxyResponder writes the proxy's errors as Status (a backend that cannot
// be reached is 503 "error trying to reach service: ...").
type proxyResponder struct{}

func (proxyResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	writeStatus(w, &apierrors.StatusError{ErrStatus: *responsewriters.ErrorToAPIStatus(err)})
}

// hijackableWriter gives UpgradeAwareHandler, which asserts http.Hijacker
// and http.Flusher, the wrapped writer's connection.
type hijackableWriter struct{ http.ResponseWriter }

func (w hijackableWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w hijackableWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w hijackableWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveProxies adds the proxy subresources to pods, services and nodes.
func serveProxies(set *Set, p *objectProxy) {
	for _, sub := range []struct {
		resource, kind string
		connect        func(context.Context, http.ResponseWriter, *http.Request, string, string) error
		options        func(url.Values) (runtime.Object, error)
	}{
		{"pods", "PodProxyOptions", p.pod, podProxyOptions},
		{"services", "ServiceProxyOptions", p.service, serviceProxyOptions},
		{"nodes", "NodeProxyOptions", p.node, nodeProxyOptions},
	} {
		res := set.ByGVR[corev1.SchemeGroupVersion.WithResource(sub.resource)]
		// Admitted as CONNECT with the options object, as upstream.
		res.Subresources["proxy"] = apiserver.Subresource{Kind: corev1.SchemeGroupVersion.WithKind(sub.kind), Connect: sub.connect, ConnectVerbs: proxyVerbs,
			ConnectOptions: sub.options, ConnectPath: true}
	}
}
