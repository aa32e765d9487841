package routes

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/ingress/ingresstest"
)

const controller = "berth.dev/ingress"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func class(name, ctrl string, isDefault bool) *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: ctrl}}
	if isDefault {
		c.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
	}
	return c
}

func svcBackend(name string, port int32) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
}

func pt(t networkingv1.PathType) *networkingv1.PathType { return &t }

// httpPath is one HTTP path of a rule.
func httpPath(p string, typ networkingv1.PathType, svc string) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: p, PathType: pt(typ), Backend: svcBackend(svc, 80)}
}

func rule(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}
}

// ing is an Ingress of class berth created age minutes after t0.
func ing(name string, age int, rules ...networkingv1.IngressRule) *networkingv1.Ingress {
	c := "berth"
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Minute))},
		Spec: networkingv1.IngressSpec{IngressClassName: &c, Rules: rules}}
}

// service is a ClusterIP Service with port 80 ("http") → 8080 and port 81
// ("admin"), and one EndpointSlice whose ready endpoints are addrs.
func service(name string, addrs ...string) (*corev1.Service, *discoveryv1.EndpointSlice) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "admin", Port: 81}}}}
	httpName, adminName := "http", "admin"
	p8080, p9090 := int32(8080), int32(9090)
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &httpName, Port: &p8080}, {Name: &adminName, Port: &p9090}}}
	for _, a := range addrs {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}})
	}
	return svc, es
}

// servicesInput is an input with Services a, b, c, d (one endpoint each,
// 10.0.0.{1,2,3,4}) and the berth class (default).
func servicesInput(ingresses ...*networkingv1.Ingress) Input {
	in := Input{Controller: controller, Classes: []*networkingv1.IngressClass{class("berth", controller, true)}, Ingresses: ingresses}
	for i, n := range []string{"a", "b", "c", "d"} {
		svc, es := service(n, "10.0.0."+string(rune('1'+i)))
		in.Services = append(in.Services, svc)
		in.Slices = append(in.Slices, es)
	}
	return in
}

// routedTo is the service a request reaches ("" when unrouted).
func routedTo(t *Table, host, p string) string {
	b, ok := t.Route(host, p)
	if !ok {
		return ""
	}
	name := strings.TrimPrefix(b.Name, "default/")
	return name[:strings.IndexByte(name, ':')]
}

func TestRouting(t *testing.T) {
	const (
		exact  = networkingv1.PathTypeExact
		prefix = networkingv1.PathTypePrefix
		impl   = networkingv1.PathTypeImplementationSpecific
	)
	for _, tc := range []struct {
		name      string
		ingresses []*networkingv1.Ingress
		requests  map[string]string // "host path" → service ("" = 404)
	}{
		{"the Ingress API's path examples", []*networkingv1.Ingress{ing("x", 0,
			rule("p.example", httpPath("/", prefix, "a")),
			rule("q.example", httpPath("/foo", prefix, "a")),
			rule("r.example", httpPath("/foo/", prefix, "a")),
			rule("s.example", httpPath("/aaa/bb", prefix, "a")),
			rule("t.example", httpPath("/aaa/bbb", prefix, "a")),
			rule("u.example", httpPath("/aaa/bbb/", prefix, "a")),
			rule("v.example", httpPath("/foo", exact, "a")),
			rule("w.example", httpPath("/", prefix, "a"), httpPath("/aaa", prefix, "b")),
			rule("x.example", httpPath("/aaa", prefix, "a"), httpPath("/aaa", exact, "b")),
			rule("y.example", httpPath("/aaa", prefix, "a"), httpPath("/aaa/bbb", prefix, "b")),
		)}, map[string]string{
			"p.example /anything": "a",
			"q.example /foo":      "a", "q.example /foo/": "a", "q.example /foo/bar": "a", "q.example /foobar": "", "q.example /": "",
			"r.example /foo": "a", "r.example /foo/": "a",
			"s.example /aaa/bbb": "", "t.example /aaa/bbb": "a", "t.example /aaa/bbb/": "a", "t.example /aaa/bbbxyz": "",
			"u.example /aaa/bbb": "a",
			"v.example /foo":     "a", "v.example /foo/": "", "v.example /FOO": "",
			"w.example /aaa/ccc": "b", "w.example /ccc": "a",
			"x.example /aaa": "b", "x.example /aaa/": "a",
			"y.example /aaa/bbb/ccc": "b", "y.example /aaa/ccc": "a",
		}},
		{"ImplementationSpecific is Prefix; empty is /", []*networkingv1.Ingress{ing("x", 0,
			rule("i.example", httpPath("/api", impl, "a")),
			rule("j.example", httpPath("", impl, "b")),
		)}, map[string]string{"i.example /api/v1": "a", "i.example /apis": "", "j.example /x/y": "b"}},
		{"exact host, then wildcard, then any host", []*networkingv1.Ingress{ing("x", 0,
			rule("web.example", httpPath("/api", prefix, "a")),
			rule("*.example", httpPath("/", prefix, "b")),
			rule("", httpPath("/", prefix, "c")),
		)}, map[string]string{
			"web.example /api": "a", "WEB.Example. /api": "a",
			"web.example /other": "b", // no path of the exact host: the wildcard's
			"x.example /":        "b", "a.b.example /": "c", "example /": "c", "other.test /": "c",
		}},
		{"hosts of several Ingresses merge; the oldest wins a tie", []*networkingv1.Ingress{
			ing("newer", 5, rule("web.example", httpPath("/", prefix, "b"), httpPath("/new", prefix, "b"))),
			ing("older", 1, rule("web.example", httpPath("/", prefix, "a"))),
		}, map[string]string{"web.example /": "a", "web.example /new/x": "b"}},
		{"nothing matches and no default backend: 404", []*networkingv1.Ingress{ing("x", 0, rule("web.example", httpPath("/", prefix, "a")))},
			map[string]string{"other.example /": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := Build(servicesInput(tc.ingresses...))
			for req, want := range tc.requests {
				host, p, _ := strings.Cut(req, " ")
				if got := routedTo(table, host, p); got != want {
					t.Errorf("%s → %q, want %q", req, got, want)
				}
			}
		})
	}
}

func TestDefaultBackends(t *testing.T) {
	withDefault := func(name string, age int, svc string, rules ...networkingv1.IngressRule) *networkingv1.Ingress {
		i := ing(name, age, rules...)
		b := svcBackend(svc, 80)
		i.Spec.DefaultBackend = &b
		return i
	}
	hostOnly := networkingv1.IngressRule{Host: "bare.example"}
	table := Build(servicesInput(
		withDefault("newer", 3, "b"),
		withDefault("older", 1, "a", rule("web.example", httpPath("/api", networkingv1.PathTypePrefix, "c"))),
		withDefault("bare", 2, "d", hostOnly),
	))
	for req, want := range map[string]string{
		"web.example /api": "c",
		"web.example /":    "a", // unmatched: the oldest Ingress's default backend
		"other /":          "a",
		"bare.example /x":  "d", // a rule without http: its Ingress's default backend
	} {
		host, p, _ := strings.Cut(req, " ")
		if got := routedTo(table, host, p); got != want {
			t.Errorf("%s → %q, want %q", req, got, want)
		}
	}
}

func TestServedIngresses(t *testing.T) {
	mine, theirs, legacy := "berth", "nginx", "berth"
	named := func(n string, c *string) *networkingv1.Ingress {
		i := ing(n, 0, rule(n+".example", httpPath("/", networkingv1.PathTypePrefix, "a")))
		i.Spec.IngressClassName = c
		return i
	}
	annotated := named("annotated", nil)
	annotated.Annotations = map[string]string{ClassAnnotation: legacy}
	annotatedOther := named("annotated-other", nil)
	annotatedOther.Annotations = map[string]string{ClassAnnotation: "nginx"}
	all := []*networkingv1.Ingress{named("mine", &mine), named("theirs", &theirs), named("unclassed", nil), annotated, annotatedOther, named("unknown", ptrTo("gone"))}
	for _, tc := range []struct {
		name    string
		classes []*networkingv1.IngressClass
		want    []string
	}{
		{"ours is the default", []*networkingv1.IngressClass{class("berth", controller, true), class("nginx", "k8s.io/ingress-nginx", false)},
			[]string{"annotated", "mine", "unclassed"}},
		{"ours is not the default", []*networkingv1.IngressClass{class("berth", controller, false), class("nginx", "k8s.io/ingress-nginx", true)},
			[]string{"annotated", "mine"}},
		{"our class deleted", []*networkingv1.IngressClass{class("nginx", "k8s.io/ingress-nginx", true)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := servicesInput(all...)
			in.Classes = tc.classes
			var got []string
			for _, n := range Build(in).Served() {
				got = append(got, n.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("served %v, want %v", got, tc.want)
			}
		})
	}
}

func ptrTo(s string) *string { return &s }

func TestBackendResolution(t *testing.T) {
	in := servicesInput()
	// Service e: three endpoints, one not ready, one terminating-and-ready
	// (ready counts), and a second slice repeating an address.
	svc, es := service("e", "10.1.0.1", "10.1.0.2", "10.1.0.3")
	no := false
	es.Endpoints[1].Conditions.Ready = &no
	es2 := es.DeepCopy()
	es2.Name = "e-def"
	es2.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1", "10.1.0.4"}}}
	// Service f: no ready endpoint; g: ExternalName; h: its slice lacks the port's name.
	svcF, esF := service("f", "10.2.0.1")
	esF.Endpoints[0].Conditions.Ready = &no
	svcG := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com."}}
	// g2: ExternalName with a named port.
	svcG2 := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g2"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName,
		ExternalName: "backend.example.org", Ports: []corev1.ServicePort{{Name: "web", Port: 8443}}}}
	svcH, esH := service("h", "10.3.0.1")
	esH.Ports = esH.Ports[1:]
	fqdn := es.DeepCopy()
	fqdn.Name, fqdn.AddressType = "e-fqdn", discoveryv1.AddressTypeFQDN
	fqdn.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"example.com"}}}
	in.Services = append(in.Services, svc, svcF, svcG, svcG2, svcH)
	in.Slices = append(in.Slices, es, es2, esF, esH, fqdn)

	byName := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "e", Port: networkingv1.ServiceBackendPort{Name: "admin"}}}
	resource := networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}}
	p := func(pp string, b networkingv1.IngressBackend) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: pp, PathType: pt(networkingv1.PathTypePrefix), Backend: b}
	}
	in.Ingresses = []*networkingv1.Ingress{ing("x", 0, rule("r.example",
		p("/e", svcBackend("e", 80)), p("/e-again", svcBackend("e", 80)), p("/e-admin", byName),
		p("/f", svcBackend("f", 80)), p("/g", svcBackend("g", 80)), p("/h", svcBackend("h", 80)),
		p("/g2", networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "g2", Port: networkingv1.ServiceBackendPort{Name: "web"}}}),
		p("/g2-missing", networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "g2", Port: networkingv1.ServiceBackendPort{Name: "nope"}}}),
		p("/missing", svcBackend("nope", 80)), p("/noport", svcBackend("e", 8080)), p("/res", resource)))}
	table := Build(in)
	for _, tc := range []struct {
		path   string
		addrs  []string
		reason string
	}{
		{"/e", []string{"10.1.0.1:8080", "10.1.0.3:8080", "10.1.0.4:8080"}, ""},
		{"/e-admin", []string{"10.1.0.1:9090", "10.1.0.3:9090", "10.1.0.4:9090"}, ""},
		{"/f", nil, "service default/f has no ready endpoints"},
		{"/g", []string{"example.com:80"}, ""},
		{"/g2", []string{"backend.example.org:8443"}, ""},
		{"/g2-missing", nil, "service default/g2 has no port nope"},
		{"/h", nil, "service default/h has no ready endpoints"},
		{"/missing", nil, "service default/nope not found"},
		{"/noport", nil, "service default/e has no port 8080"},
		{"/res", nil, "resource backends are not supported"},
	} {
		b, ok := table.Route("r.example", tc.path)
		if !ok {
			t.Fatalf("%s: not routed", tc.path)
		}
		if !slices.Equal(b.Addresses, tc.addrs) || b.Reason != tc.reason {
			t.Errorf("%s: addresses %v reason %q, want %v %q", tc.path, b.Addresses, b.Reason, tc.addrs, tc.reason)
		}
	}
	e1, _ := table.Route("r.example", "/e")
	e2, _ := table.Route("r.example", "/e-again")
	if e1 != e2 {
		t.Error("two routes to one Service port do not share their backend (and its round-robin)")
	}
	var picks []string
	for range 6 {
		a, _ := e1.Pick()
		picks = append(picks, a)
	}
	if want := []string{"10.1.0.1:8080", "10.1.0.3:8080", "10.1.0.4:8080", "10.1.0.1:8080", "10.1.0.3:8080", "10.1.0.4:8080"}; !slices.Equal(picks, want) {
		t.Errorf("round-robin picks %v, want %v", picks, want)
	}
	if f, _ := table.Route("r.example", "/f"); f != nil {
		if _, ok := f.Pick(); ok {
			t.Error("a backend without addresses picked one")
		}
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/": "/", "a": "/a", "/a/b/": "/a/b/", "//a//b": "/a/b", "/public/../admin": "/admin",
		"/a/./b/": "/a/b/", "/../..": "/", "/a/..": "/",
	} {
		if got := CleanPath(in); got != want {
			t.Errorf("CleanPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func tlsSecret(t *testing.T, name string, names ...string) *corev1.Secret {
	crt, key := ingresstest.SelfSigned(t, names...)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
}

func TestCertificates(t *testing.T) {
	withTLS := func(name string, age int, entries ...networkingv1.IngressTLS) *networkingv1.Ingress {
		i := ing(name, age, rule("web.example", httpPath("/", networkingv1.PathTypePrefix, "a")))
		i.Spec.TLS = entries
		return i
	}
	in := servicesInput(
		withTLS("older", 1, networkingv1.IngressTLS{Hosts: []string{"web.example", "*.apps.example"}, SecretName: "web"},
			networkingv1.IngressTLS{SecretName: "sans"}),
		withTLS("newer", 2, networkingv1.IngressTLS{Hosts: []string{"web.example", "new.example"}, SecretName: "new"},
			networkingv1.IngressTLS{Hosts: []string{"gone.example"}, SecretName: "missing"},
			networkingv1.IngressTLS{Hosts: []string{"bad.example"}, SecretName: "bad"},
			networkingv1.IngressTLS{Hosts: []string{"opaque.example"}, SecretName: "opaque"}),
	)
	bad := tlsSecret(t, "bad", "bad.example")
	bad.Data[corev1.TLSPrivateKeyKey] = []byte("not a key")
	opaque := tlsSecret(t, "opaque", "opaque.example")
	opaque.Type = corev1.SecretTypeOpaque
	in.Secrets = []*corev1.Secret{tlsSecret(t, "web", "web.example"), tlsSecret(t, "sans", "sans.example", "*.sans.example"),
		tlsSecret(t, "new", "new.example"), bad, opaque}
	table := Build(in)
	subject := func(sni string) string {
		c := table.Certificate(sni)
		if c == nil {
			return ""
		}
		return c.Leaf.Subject.CommonName
	}
	for sni, want := range map[string]string{
		"web.example": "web.example", "WEB.EXAMPLE": "web.example", // the older Ingress's
		"x.apps.example": "web.example", "apps.example": "", "a.x.apps.example": "",
		"sans.example": "sans.example", "x.sans.example": "sans.example", // an entry without hosts: its certificate's names
		"new.example":  "new.example",
		"gone.example": "", "bad.example": "", "opaque.example": "", "": "",
	} {
		if got := subject(sni); got != want {
			t.Errorf("certificate for %q: %q, want %q", sni, got, want)
		}
	}
	problems := strings.Join(table.Problems(), "\n")
	for _, want := range []string{`ingress default/newer: TLS secret "missing": not found`, `ingress default/newer: TLS secret "bad": tls:`,
		`ingress default/newer: TLS secret "opaque": type "Opaque", want kubernetes.io/tls`} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q:\n%s", want, problems)
		}
	}
	if got := table.Served(); !slices.Equal(got, []types.NamespacedName{{Namespace: "default", Name: "newer"}, {Namespace: "default", Name: "older"}}) {
		t.Errorf("served %v", got)
	}
}
