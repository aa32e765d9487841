package resources

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// DefaultAgentPort is the node agent's API port when a Node does not say
// (status.daemonEndpoints.kubeletEndpoint.port), as the kubelet's.
const DefaultAgentPort = 10250

// defaultContainerAnnotation names the container kubectl and the apiserver
// pick when a pod has several and the request names none.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// nodeProxy forwards pods/log, exec, attach and portforward to the agent of
// the pod's node, on the kubelet API paths (/containerLogs, /exec, /attach,
// /portForward). Upgraded connections (SPDY, WebSocket) pass through, but
// for logs asked over a WebSocket, which the apiserver streams itself (as
// kube-apiserver does).
type nodeProxy struct {
	pods, nodes *genericregistry.Store
	transport   http.RoundTripper
}

func (p *nodeProxy) log(ctx context.Context, w http.ResponseWriter, r *http.Request, ns, name string) error {
	if wsstream.IsWebSocketRequest(r) {
		return p.logWebSocket(ctx, w, r, ns, name)
	}
	return p.forward(ctx, w, r, ns, name, "/containerLogs", true)
}

func (p *nodeProxy) exec(ctx context.Context, w http.ResponseWriter, r *http.Request, ns, name string) error {
	return p.forward(ctx, w, r, ns, name, "/exec", true)
}

func (p *nodeProxy) attach(ctx context.Context, w http.ResponseWriter, r *http.Request, ns, name string) error {
	return p.forward(ctx, w, r, ns, name, "/attach", true)
}

func (p *nodeProxy) portForward(ctx context.Context, w http.ResponseWriter, r *http.Request, ns, name string) error {
	return p.forward(ctx, w, r, ns, name, "/portForward", false)
}

func (p *nodeProxy) forward(ctx context.Context, w http.ResponseWriter, r *http.Request, ns, name, prefix string, withContainer bool) error {
	target, err := p.target(ctx, r, ns, name, prefix, withContainer)
	if err != nil {
		return err
	}
	rp := &httputil.ReverseProxy{
		Transport:     p.transport,
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Authorization")
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeStatus(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error dialing backend: %v", err)))
		},
	}
	rp.ServeHTTP(w, r)
	return nil
}

// target is the agent URL serving a pod request: the kubelet API path
// prefix/NAMESPACE/POD[/CONTAINER] on the pod's node, with the request's
// query (but the container) passed on.
func (p *nodeProxy) target(ctx context.Context, r *http.Request, ns, name, prefix string, withContainer bool) (*url.URL, error) {
	if p.transport == nil {
		return nil, apierrors.NewServiceUnavailable("no transport to node agents is configured")
	}
	obj, err := p.pods.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	query := r.URL.Query()
	path := prefix + "/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
	if withContainer {
		c, err := containerFor(pod, query.Get("container"))
		if err != nil {
			return nil, err
		}
		query.Del("container")
		path += "/" + url.PathEscape(c)
	}
	host, err := p.agentAddress(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "https", Host: host, Path: path, RawQuery: query.Encode()}, nil
}

// agentAddress is host:port of a node's agent: its InternalIP (else
// ExternalIP, else Hostname) and daemon endpoint port.
func (p *nodeProxy) agentAddress(ctx context.Context, nodeName string) (string, error) {
	obj, err := p.nodes.Get(genericapirequest.WithNamespace(ctx, ""), nodeName, &metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	node := obj.(*corev1.Node)
	addr := nodeHost(node)
	if addr == "" {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %s has no address", nodeName))
	}
	port := nodeAgentPort(node)
	return net.JoinHostPort(addr, strconv.Itoa(port)), nil
}

// containerFor resolves the container a request is about, as upstream does.
func containerFor(pod *corev1.Pod, name string) (string, error) {
	var all []string
	for _, c := range pod.Spec.InitContainers {
		all = append(all, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		all = append(all, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		all = append(all, c.Name)
	}
	if name != "" {
		if !slices.Contains(all, name) {
			return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
		}
		return name, nil
	}
	if d := pod.Annotations[defaultContainerAnnotation]; d != "" && slices.Contains(all, d) {
		return d, nil
	}
	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Name, nil
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
}

// writeStatus writes an API error as a JSON Status (the proxy has no
// negotiated serializer at hand once it has taken over the response).
func writeStatus(w http.ResponseWriter, err apierrors.APIStatus) {
	s := err.Status()
	s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	data, _ := json.Marshal(s)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(data)
}
