// Package routes builds an ingress controller's route table from the
// cluster's objects, and answers which backend a request goes to and which
// certificate a TLS handshake gets. It is pure: Build takes a snapshot
// (IngressClasses, Ingresses, Services, EndpointSlices, TLS Secrets) and
// returns an immutable Table, so the controller can build a new table on
// every change and swap it in atomically while requests keep reading the
// old one.
//
// The rules are the Ingress API's (networking.k8s.io/v1):
//
//   - An Ingress is served when its class (spec.ingressClassName, else the
//     deprecated kubernetes.io/ingress.class annotation) is an IngressClass
//     whose spec.controller is the controller's name; an Ingress naming no
//     class is served when one of those classes is the cluster's default
//     (ingressclass.kubernetes.io/is-default-class: "true").
//   - Hosts: a request's host is matched exactly, then against wildcard
//     hosts ("*.example.com" matches "a.example.com", not
//     "b.a.example.com" nor "example.com"), then against rules without a
//     host; the first of these groups with a matching path wins.
//   - Paths, within a group: the longest matching path wins, Exact before
//     Prefix when equally long. Exact matches the whole path; Prefix
//     matches element by element, split on "/" ("/foo" matches "/foo",
//     "/foo/" and "/foo/bar", not "/foobar"; a trailing slash is
//     ignored); ImplementationSpecific is Prefix (an empty path is "/").
//   - A rule without http sends its host to its Ingress's defaultBackend.
//   - A request no rule matches goes to the defaultBackend of the oldest
//     served Ingress that has one; with none, it is not routed (404).
//   - The same host and path in two Ingresses: the oldest Ingress (then the
//     lowest namespace/name) wins; so for a TLS host.
//   - Backends: a Service port (by number, or by name) resolves, through
//     the Service's EndpointSlices, to the ready endpoints' addresses on the
//     slice port of the same name; Pick hands them out round-robin. An
//     ExternalName Service resolves to its external name on the port (the
//     proxy dials it by DNS). A missing Service or port, a Service with no
//     ready endpoint or a resource backend (no kind of resource is known
//     to this controller) has no address (the proxy answers 503) and says
//     why.
//   - TLS: each spec.tls entry's Secret (kubernetes.io/tls, in the
//     Ingress's namespace) serves its hosts (exact or wildcard); an entry
//     without hosts serves the DNS names of its certificate.
package routes

import (
	"crypto/tls"
	"fmt"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ClassAnnotation is the deprecated annotation naming an Ingress's class.
const ClassAnnotation = "kubernetes.io/ingress.class"

// Input is the snapshot a Table is built from.
type Input struct {
	// Controller is the controller's name: IngressClasses whose
	// spec.controller equals it are served.
	Controller string
	Classes    []*networkingv1.IngressClass
	Ingresses  []*networkingv1.Ingress
	Services   []*corev1.Service
	Slices     []*discoveryv1.EndpointSlice
	// Secrets are the TLS Secrets the Ingresses may name (others are
	// ignored).
	Secrets []*corev1.Secret
}

// Table is an immutable route table; its methods are safe for concurrent
// use.
type Table struct {
	exact     map[string][]route
	wildcard  map[string][]route // by the host's part after "*."
	anyHost   []route
	fallback  *Backend
	certs     map[string]*tls.Certificate
	wildCerts map[string]*tls.Certificate
	served    []types.NamespacedName
	problems  []string
}

// route is one path of one host.
type route struct {
	path    string // Prefix: without its trailing slash ("" for "/")
	exact   bool
	backend *Backend
	rank    int // the Ingress's age rank: lower is older
}

// Backend is where a route sends requests: a Service port's ready
// endpoints.
type Backend struct {
	// Name is "namespace/service:port" (or the resource reference).
	Name string
	// Addresses are the endpoints, host:port, sorted.
	Addresses []string
	// Reason says why there are no addresses.
	Reason string
	next   atomic.Uint64
}

// Pick returns the next address, round-robin; false when there is none.
func (b *Backend) Pick() (string, bool) {
	if len(b.Addresses) == 0 {
		return "", false
	}
	n := b.next.Add(1) - 1
	return b.Addresses[n%uint64(len(b.Addresses))], true
}

// Served lists the Ingresses the table serves (their status is the
// controller's to write), sorted.
func (t *Table) Served() []types.NamespacedName { return t.served }

// Problems lists what the table could not use (a TLS Secret missing or
// invalid), one sentence each, sorted.
func (t *Table) Problems() []string { return t.problems }

// Route returns the backend for a request to host (without port, any
// case) and path (cleaned, see CleanPath); false when nothing matches.
func (t *Table) Route(host, reqPath string) (*Backend, bool) {
	host = normalizeHost(host)
	if b, ok := match(t.exact[host], reqPath); ok {
		return b, true
	}
	if i := strings.IndexByte(host, '.'); i > 0 {
		if b, ok := match(t.wildcard[host[i+1:]], reqPath); ok {
			return b, true
		}
	}
	if b, ok := match(t.anyHost, reqPath); ok {
		return b, true
	}
	return t.fallback, t.fallback != nil
}

// Certificate returns the certificate for a TLS server name (SNI), exact
// host first, then wildcard; nil when none serves it.
func (t *Table) Certificate(serverName string) *tls.Certificate {
	host := normalizeHost(serverName)
	if c, ok := t.certs[host]; ok {
		return c
	}
	if i := strings.IndexByte(host, '.'); i > 0 {
		return t.wildCerts[host[i+1:]]
	}
	return nil
}

// match returns the backend of the first route (routes are sorted by
// precedence) matching p.
func match(routes []route, p string) (*Backend, bool) {
	for _, r := range routes {
		if r.matches(p) {
			return r.backend, true
		}
	}
	return nil, false
}

func (r route) matches(p string) bool {
	if r.exact {
		return p == r.path
	}
	return r.path == "" || p == r.path || strings.HasPrefix(p, r.path+"/")
}

// CleanPath returns the path a request is routed by: rooted, with "." and
// ".." elements and repeated slashes resolved (path.Clean), keeping a
// trailing slash. A request for "/public/../admin" is routed (and
// forwarded) as "/admin".
func CleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// normalizeHost lower-cases a host and drops a trailing dot.
func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// Build builds the table for in.
func Build(in Input) *Table {
	b := builder{
		in: in, t: &Table{exact: map[string][]route{}, wildcard: map[string][]route{}, certs: map[string]*tls.Certificate{}, wildCerts: map[string]*tls.Certificate{}},
		backends: map[string]*Backend{}, services: map[types.NamespacedName]*corev1.Service{},
		slices: map[types.NamespacedName][]*discoveryv1.EndpointSlice{}, secrets: map[types.NamespacedName]*corev1.Secret{},
	}
	for _, s := range in.Services {
		b.services[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	}
	for _, es := range in.Slices {
		if svc := es.Labels[discoveryv1.LabelServiceName]; svc != "" {
			k := types.NamespacedName{Namespace: es.Namespace, Name: svc}
			b.slices[k] = append(b.slices[k], es)
		}
	}
	for _, s := range in.Secrets {
		b.secrets[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	}
	ingresses := Served(in.Controller, in.Classes, in.Ingresses)
	for rank, ing := range ingresses {
		b.t.served = append(b.t.served, types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name})
		b.addIngress(ing, rank)
	}
	sort.Slice(b.t.served, func(i, j int) bool { return b.t.served[i].String() < b.t.served[j].String() })
	for _, rs := range b.t.exact {
		sortRoutes(rs)
	}
	for _, rs := range b.t.wildcard {
		sortRoutes(rs)
	}
	sortRoutes(b.t.anyHost)
	sort.Strings(b.t.problems)
	return b.t
}

// Served returns the Ingresses a controller named controller serves,
// oldest first (then by namespace/name).
func Served(controller string, classes []*networkingv1.IngressClass, ingresses []*networkingv1.Ingress) []*networkingv1.Ingress {
	ours := map[string]bool{}
	defaultOurs := false
	for _, c := range classes {
		if c.Spec.Controller == controller {
			ours[c.Name] = true
			defaultOurs = defaultOurs || c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
		}
	}
	var out []*networkingv1.Ingress
	for _, ing := range ingresses {
		class, named := "", false
		if ing.Spec.IngressClassName != nil {
			class, named = *ing.Spec.IngressClassName, true
		} else if a, ok := ing.Annotations[ClassAnnotation]; ok {
			class, named = a, true
		}
		if (named && ours[class]) || (!named && defaultOurs) {
			out = append(out, ing)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// sortRoutes orders routes by precedence: longer paths first, Exact before
// Prefix, older Ingresses first.
func sortRoutes(rs []route) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if len(a.path) != len(b.path) {
			return len(a.path) > len(b.path)
		}
		if a.exact != b.exact {
			return a.exact
		}
		return a.rank < b.rank
	})
}

type builder struct {
	in       Input
	t        *Table
	backends map[string]*Backend
	services map[types.NamespacedName]*corev1.Service
	slices   map[types.NamespacedName][]*discoveryv1.EndpointSlice
	secrets  map[types.NamespacedName]*corev1.Secret
}

func (b *builder) problem(ing *networkingv1.Ingress, format string, args ...any) {
	b.t.problems = append(b.t.problems, fmt.Sprintf("ingress %s/%s: ", ing.Namespace, ing.Name)+fmt.Sprintf(format, args...))
}

func (b *builder) addIngress(ing *networkingv1.Ingress, rank int) {
	var fallback *Backend
	if ing.Spec.DefaultBackend != nil {
		fallback = b.backend(ing.Namespace, ing.Spec.DefaultBackend)
		if b.t.fallback == nil {
			b.t.fallback = fallback
		}
	}
	for _, rule := range ing.Spec.Rules {
		var routes []route
		if rule.HTTP == nil {
			if fallback != nil {
				routes = append(routes, route{backend: fallback, rank: rank})
			}
		} else {
			for _, p := range rule.HTTP.Paths {
				routes = append(routes, newRoute(p, b.backend(ing.Namespace, &p.Backend), rank))
			}
		}
		host := normalizeHost(rule.Host)
		switch {
		case host == "":
			b.t.anyHost = append(b.t.anyHost, routes...)
		case strings.HasPrefix(host, "*."):
			b.t.wildcard[host[2:]] = append(b.t.wildcard[host[2:]], routes...)
		default:
			b.t.exact[host] = append(b.t.exact[host], routes...)
		}
	}
	for _, entry := range ing.Spec.TLS {
		b.addTLS(ing, entry)
	}
}

func newRoute(p networkingv1.HTTPIngressPath, backend *Backend, rank int) route {
	r := route{backend: backend, rank: rank, path: p.Path}
	if p.PathType != nil && *p.PathType == networkingv1.PathTypeExact {
		r.exact = true
		return r
	}
	r.path = strings.TrimRight(r.path, "/")
	return r
}

// addTLS registers the certificate of one spec.tls entry for its hosts,
// unless an older Ingress already did.
func (b *builder) addTLS(ing *networkingv1.Ingress, entry networkingv1.IngressTLS) {
	if entry.SecretName == "" {
		return
	}
	key := types.NamespacedName{Namespace: ing.Namespace, Name: entry.SecretName}
	secret, ok := b.secrets[key]
	if !ok {
		b.problem(ing, "TLS secret %q: not found (or not of type %s)", entry.SecretName, corev1.SecretTypeTLS)
		return
	}
	if secret.Type != corev1.SecretTypeTLS {
		b.problem(ing, "TLS secret %q: type %q, want %s", entry.SecretName, secret.Type, corev1.SecretTypeTLS)
		return
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		b.problem(ing, "TLS secret %q: %v", entry.SecretName, err)
		return
	}
	hosts := entry.Hosts
	if len(hosts) == 0 && cert.Leaf != nil {
		hosts = cert.Leaf.DNSNames
	}
	for _, h := range hosts {
		h = normalizeHost(h)
		certs, name := b.t.certs, h
		if strings.HasPrefix(h, "*.") {
			certs, name = b.t.wildCerts, h[2:]
		}
		if _, taken := certs[name]; !taken {
			certs[name] = &cert
		}
	}
}

// backend returns the (shared) Backend of an Ingress backend in namespace
// ns.
func (b *builder) backend(ns string, ib *networkingv1.IngressBackend) *Backend {
	if ib.Resource != nil {
		name := fmt.Sprintf("%s/%s %s", ns, ib.Resource.Kind, ib.Resource.Name)
		return b.shared(name, func(be *Backend) { be.Reason = "resource backends are not supported" })
	}
	port := ib.Service.Port.Name
	if port == "" {
		port = strconv.Itoa(int(ib.Service.Port.Number))
	}
	name := fmt.Sprintf("%s/%s:%s", ns, ib.Service.Name, port)
	return b.shared(name, func(be *Backend) { b.resolve(be, ns, ib.Service) })
}

func (b *builder) shared(name string, fill func(*Backend)) *Backend {
	if be, ok := b.backends[name]; ok {
		return be
	}
	be := &Backend{Name: name}
	fill(be)
	b.backends[name] = be
	return be
}

// external fills an ExternalName Service backend: its external name on
// the Service port's number (or, the Service listing no such port, the
// backend's port number), as ingress-nginx does.
func external(be *Backend, key types.NamespacedName, svc *corev1.Service, sp *corev1.ServicePort, number int32) {
	port := number
	if sp != nil {
		port = sp.Port
	}
	host := strings.TrimSuffix(svc.Spec.ExternalName, ".")
	switch {
	case host == "":
		be.Reason = fmt.Sprintf("service %s of type ExternalName has no externalName", key)
	case port == 0:
		be.Reason = fmt.Sprintf("service %s has no port %s", key, strings.TrimPrefix(be.Name, key.String()+":"))
	default:
		be.Addresses = []string{net.JoinHostPort(host, strconv.Itoa(int(port)))}
	}
}

// resolve fills a Service backend's addresses from the Service's
// EndpointSlices (an ExternalName Service's from its external name).
func (b *builder) resolve(be *Backend, ns string, sb *networkingv1.IngressServiceBackend) {
	key := types.NamespacedName{Namespace: ns, Name: sb.Name}
	svc, ok := b.services[key]
	if !ok {
		be.Reason = fmt.Sprintf("service %s not found", key)
		return
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if (sb.Port.Name != "" && p.Name == sb.Port.Name) || (sb.Port.Name == "" && p.Port == sb.Port.Number) {
			sp = p
			break
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		external(be, key, svc, sp, sb.Port.Number)
		return
	}
	if sp == nil {
		be.Reason = fmt.Sprintf("service %s has no port %s", key, strings.TrimPrefix(be.Name, key.String()+":"))
		return
	}
	seen := map[string]bool{}
	for _, es := range b.slices[key] {
		if es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		var port int32
		for _, p := range es.Ports {
			name, proto := "", corev1.ProtocolTCP
			if p.Name != nil {
				name = *p.Name
			}
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if name == sp.Name && proto == corev1.ProtocolTCP && p.Port != nil {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				seen[net.JoinHostPort(a, strconv.Itoa(int(port)))] = true
			}
		}
	}
	for a := range seen {
		be.Addresses = append(be.Addresses, a)
	}
	sort.Strings(be.Addresses)
	if len(be.Addresses) == 0 {
		be.Reason = fmt.Sprintf("service %s has no ready endpoints", key)
	}
}
