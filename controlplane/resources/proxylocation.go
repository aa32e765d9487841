package resources

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// The proxy subresources' targets, as kube-apiserver's ResourceLocation
// functions resolve them: pure functions of the objects, so the target of
// a proxied request only ever comes from the object named in the path.

// proxyID is a proxy subresource's name: "NAME", "NAME:PORT" or
// "SCHEME:NAME:PORT" (scheme "", "http" or "https").
type proxyID struct {
	scheme, name, port string
}

// parseProxyID splits a proxy subresource's name; kind ("pod", "service",
// "node") words the error.
func parseProxyID(kind, id string) (proxyID, error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return proxyID{}, apierrors.NewBadRequest(fmt.Sprintf("invalid %s request %q", kind, id))
	}
	return proxyID{scheme: scheme, name: name, port: port}, nil
}

// portNumber parses a port number (1-65535); ok is false for anything else
// (a port name).
func portNumber(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, false
	}
	return n, true
}

// podProxyLocation is where pods/NAME[:PORT]/proxy goes: the pod's IP
// (status.podIP, which must be a global unicast address) and the port asked
// for — a number, or the name of one of the pod's container ports — or,
// when none is, the first port the first container with ports declares
// (none: the scheme's default port).
func podProxyLocation(pod *corev1.Pod, id proxyID) (*url.URL, error) {
	port := id.port
	if port == "" {
	first:
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				port = strconv.Itoa(int(p.ContainerPort))
				break first
			}
		}
	} else if _, ok := portNumber(port); !ok {
		n, found := namedContainerPort(pod, port)
		if !found {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no such port %q on pod %q", port, pod.Name))
		}
		port = strconv.Itoa(n)
	}
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil || !ip.IsGlobalUnicast() {
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	loc := &url.URL{Scheme: id.scheme, Host: ip.String()}
	if port != "" {
		loc.Host = net.JoinHostPort(ip.String(), port)
	} else if ip.To4() == nil {
		loc.Host = "[" + ip.String() + "]"
	}
	return loc, nil
}

// namedContainerPort finds a container port by name among the pod's
// containers (and its sidecar init containers).
func namedContainerPort(pod *corev1.Pod, name string) (int, bool) {
	containers := append(append([]corev1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return int(p.ContainerPort), true
			}
		}
	}
	return 0, false
}

// servicePortName is the name of the Service's port numbered port (a
// service proxy request names the port by name or by number; Endpoints
// carry names).
func servicePortName(svc *corev1.Service, port int) (string, error) {
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == port {
			return p.Name, nil
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", port, svc.Name))
}

// serviceProxyLocation picks, as kube-apiserver does, an address of the
// Service's Endpoints that serves the port named portName, starting from a
// random subset and address (intn), skipping addresses that are not a pod's
// (isPod: the address's target is a pod of the namespace with that IP), so
// a Service proxies only to its pods. id names the service in errors.
func serviceProxyLocation(eps *corev1.Endpoints, scheme, portName, id string, isPod func(corev1.EndpointAddress) bool, intn func(int) int) (*url.URL, error) {
	n := len(eps.Subsets)
	if n == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", eps.Name))
	}
	start := intn(n)
	for i := range n {
		ss := eps.Subsets[(start+i)%n]
		if len(ss.Addresses) == 0 {
			continue
		}
		for _, p := range ss.Ports {
			if p.Name != portName {
				continue
			}
			first := intn(len(ss.Addresses))
			for j := range ss.Addresses {
				addr := ss.Addresses[(first+j)%len(ss.Addresses)]
				if !isPod(addr) {
					continue
				}
				return &url.URL{Scheme: scheme, Host: net.JoinHostPort(addr.IP, strconv.Itoa(int(p.Port)))}, nil
			}
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", id))
}

// endpointIsPod reports whether addr targets a pod of namespace ns whose
// IPs include addr's (pod: the named pod, nil when it does not exist).
func endpointIsPod(addr corev1.EndpointAddress, ns string, pod func(name string) *corev1.Pod) bool {
	if addr.TargetRef == nil || addr.TargetRef.Kind != "Pod" || addr.TargetRef.Namespace != ns {
		return false
	}
	p := pod(addr.TargetRef.Name)
	if p == nil {
		return false
	}
	for _, ip := range p.Status.PodIPs {
		if ip.IP == addr.IP {
			return true
		}
	}
	return false
}

// nodeProxyLocation is where nodes/NAME[:PORT]/proxy goes: the node's
// address (nodeHost) whose every IP must be global unicast (lookup resolves
// a hostname), on the agent's port over HTTPS (agent true: the request
// goes with the apiserver's client certificate) when no port or that port
// is asked for, else on the port asked for with the scheme asked for.
func nodeProxyLocation(ctx context.Context, node *corev1.Node, id proxyID, lookup func(context.Context, string) ([]net.IP, error)) (loc *url.URL, agent bool, err error) {
	host := nodeHost(node)
	if host == "" {
		return nil, false, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s has no address", node.Name))
	}
	ips, err := lookup(ctx, host)
	if err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	if len(ips) == 0 {
		return nil, false, apierrors.NewBadRequest("no addresses for hostname")
	}
	for _, ip := range ips {
		if !ip.IsGlobalUnicast() {
			return nil, false, apierrors.NewBadRequest("address not allowed")
		}
	}
	agentPort := strconv.Itoa(nodeAgentPort(node))
	if id.port == "" || id.port == agentPort {
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, agentPort)}, true, nil
	}
	if _, ok := portNumber(id.port); !ok {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q: port %q is not a port number", node.Name+":"+id.port, id.port))
	}
	return &url.URL{Scheme: id.scheme, Host: net.JoinHostPort(host, id.port)}, false, nil
}

// nodeHost is the address the apiserver reaches a node at: its InternalIP,
// else ExternalIP, else Hostname ("" when it has none).
func nodeHost(node *corev1.Node) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}

// nodeAgentPort is the node agent's API port
// (status.daemonEndpoints.kubeletEndpoint.port, default DefaultAgentPort).
func nodeAgentPort(node *corev1.Node) int {
	if p := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port); p != 0 {
		return p
	}
	return DefaultAgentPort
}

// lookupHost resolves a node's address: an IP is itself, a name is asked
// of the resolver.
func lookupHost(ctx context.Context, host string) ([]net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	ips := make([]net.IP, len(addrs))
	for i, a := range addrs {
		ips[i] = a.IP
	}
	return ips, nil
}

// AgentAddress is host:port of a node's agent API ("" when the node has no
// address).
func AgentAddress(node *corev1.Node) string {
	host := nodeHost(node)
	if host == "" {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(nodeAgentPort(node)))
}
