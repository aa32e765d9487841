package validation

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func pathType(t networkingv1.PathType) *networkingv1.PathType { return &t }

func serviceBackend(name string, port int32) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
}

func validIngress() *networkingv1.Ingress {
	class := "berth"
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: networkingv1.IngressSpec{
			IngressClassName: &class,
			Rules: []networkingv1.IngressRule{{Host: "web.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: pathType(networkingv1.PathTypePrefix), Backend: serviceBackend("web", 80)}},
			}}}},
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"web.example", "*.web.example"}, SecretName: "web-tls"}},
		},
	}
}

func TestValidateIngress(t *testing.T) {
	path0 := func(ing *networkingv1.Ingress) *networkingv1.HTTPIngressPath { return &ing.Spec.Rules[0].HTTP.Paths[0] }
	const p0 = "spec.rules[0].http.paths[0]"
	for name, tc := range map[string]struct {
		mutate func(*networkingv1.Ingress)
		wants  []want
	}{
		"valid": {func(*networkingv1.Ingress) {}, nil},
		"default backend only": {func(ing *networkingv1.Ingress) {
			b := serviceBackend("web", 80)
			ing.Spec.Rules, ing.Spec.DefaultBackend = nil, &b
		}, nil},
		"wildcard host": {func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "*.example.com" }, nil},
		"no rules nor default backend": {func(ing *networkingv1.Ingress) { ing.Spec.Rules = nil },
			[]want{{field.ErrorTypeInvalid, "spec", "either `defaultBackend` or `rules` must be specified"}}},
		"host is an IP": {func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "10.0.0.1" },
			[]want{{field.ErrorTypeInvalid, "spec.rules[0].host", "must be a DNS name, not an IP address"}}},
		"host not a DNS name": {func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "Web_Example" },
			[]want{{field.ErrorTypeInvalid, "spec.rules[0].host", "RFC 1123 subdomain"}}},
		"bad wildcard": {func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "foo.*.example" },
			[]want{{field.ErrorTypeInvalid, "spec.rules[0].host", "wildcard DNS-1123 subdomain"}}},
		"no paths": {func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths = nil },
			[]want{{field.ErrorTypeRequired, "spec.rules[0].http.paths", ""}}},
		"no pathType": {func(ing *networkingv1.Ingress) { path0(ing).PathType = nil },
			[]want{{field.ErrorTypeRequired, p0 + ".pathType", "pathType must be specified"}}},
		"unknown pathType": {func(ing *networkingv1.Ingress) { path0(ing).PathType = pathType("Regex") },
			[]want{{field.ErrorTypeNotSupported, p0 + ".pathType", `"Exact", "ImplementationSpecific", "Prefix"`}}},
		"relative prefix": {func(ing *networkingv1.Ingress) { path0(ing).Path = "foo" },
			[]want{{field.ErrorTypeInvalid, p0 + ".path", "must be an absolute path"}}},
		"double slash": {func(ing *networkingv1.Ingress) { path0(ing).Path = "/a//b" },
			[]want{{field.ErrorTypeInvalid, p0 + ".path", "must not contain '//'"}}},
		"dot suffix": {func(ing *networkingv1.Ingress) {
			path0(ing).PathType, path0(ing).Path = pathType(networkingv1.PathTypeExact), "/a/."
		},
			[]want{{field.ErrorTypeInvalid, p0 + ".path", "cannot end with '/.'"}}},
		"implementation specific may be empty": {func(ing *networkingv1.Ingress) {
			path0(ing).PathType, path0(ing).Path = pathType(networkingv1.PathTypeImplementationSpecific), ""
		}, nil},
		"implementation specific relative": {func(ing *networkingv1.Ingress) {
			path0(ing).PathType, path0(ing).Path = pathType(networkingv1.PathTypeImplementationSpecific), "x"
		}, []want{{field.ErrorTypeInvalid, p0 + ".path", "must be an absolute path"}}},
		"both backends": {func(ing *networkingv1.Ingress) {
			path0(ing).Backend.Resource = &metav1TypedRef
		}, []want{{field.ErrorTypeInvalid, p0 + ".backend", "cannot set both resource and service backends"}}},
		"no backend": {func(ing *networkingv1.Ingress) { path0(ing).Backend = networkingv1.IngressBackend{} },
			[]want{{field.ErrorTypeInvalid, p0 + ".backend", "resource or service backend is required"}}},
		"resource backend": {func(ing *networkingv1.Ingress) {
			path0(ing).Backend = networkingv1.IngressBackend{Resource: &metav1TypedRef}
		}, nil},
		"resource backend without kind": {func(ing *networkingv1.Ingress) {
			r := metav1TypedRef
			r.Kind = ""
			path0(ing).Backend = networkingv1.IngressBackend{Resource: &r}
		}, []want{{field.ErrorTypeRequired, p0 + ".backend.resource.kind", ""}}},
		"service name missing": {func(ing *networkingv1.Ingress) { path0(ing).Backend.Service.Name = "" },
			[]want{{field.ErrorTypeRequired, p0 + ".backend.service.name", ""}}},
		"service name not DNS-1035": {func(ing *networkingv1.Ingress) { path0(ing).Backend.Service.Name = "1web" },
			[]want{{field.ErrorTypeInvalid, p0 + ".backend.service.name", "DNS-1035 label"}}},
		"port name and number": {func(ing *networkingv1.Ingress) { path0(ing).Backend.Service.Port.Name = "http" },
			[]want{{field.ErrorTypeInvalid, p0 + ".backend", "cannot set both port name & port number"}}},
		"no port": {func(ing *networkingv1.Ingress) { path0(ing).Backend.Service.Port.Number = 0 },
			[]want{{field.ErrorTypeRequired, p0 + ".backend", "port name or number is required"}}},
		"port out of range": {func(ing *networkingv1.Ingress) { path0(ing).Backend.Service.Port.Number = 70000 },
			[]want{{field.ErrorTypeInvalid, p0 + ".backend.service.port.number", "between 1 and 65535"}}},
		"bad port name": {func(ing *networkingv1.Ingress) {
			path0(ing).Backend.Service.Port = networkingv1.ServiceBackendPort{Name: "http_"}
		}, []want{{field.ErrorTypeInvalid, p0 + ".backend.service.port.name", ""}}},
		"bad default backend": {func(ing *networkingv1.Ingress) { ing.Spec.DefaultBackend = &networkingv1.IngressBackend{} },
			[]want{{field.ErrorTypeInvalid, "spec.defaultBackend", "resource or service backend is required"}}},
		"bad TLS host": {func(ing *networkingv1.Ingress) { ing.Spec.TLS[0].Hosts[1] = "a.*.example" },
			[]want{{field.ErrorTypeInvalid, "spec.tls[0].hosts[1]", "wildcard"}}},
		"bad TLS secret": {func(ing *networkingv1.Ingress) { ing.Spec.TLS[0].SecretName = "Web TLS" },
			[]want{{field.ErrorTypeInvalid, "spec.tls[0].secretName", "RFC 1123 subdomain"}}},
		"TLS without secret": {func(ing *networkingv1.Ingress) { ing.Spec.TLS[0].SecretName = "" }, nil},
		"bad class name": {func(ing *networkingv1.Ingress) { c := "Berth!"; ing.Spec.IngressClassName = &c },
			[]want{{field.ErrorTypeInvalid, "spec.ingressClassName", ""}}},
		"annotation disagrees with class": {func(ing *networkingv1.Ingress) {
			ing.Annotations = map[string]string{IngressClassAnnotation: "nginx"}
		}, []want{{field.ErrorTypeInvalid, "annotations.kubernetes.io/ingress.class", "must match `ingressClassName` when both are specified"}}},
		"bad name": {func(ing *networkingv1.Ingress) { ing.Name = "Web" }, []want{{field.ErrorTypeInvalid, "metadata.name", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			ing := validIngress()
			tc.mutate(ing)
			checkErrors(t, ValidateIngress(ing), tc.wants...)
		})
	}
}

// metav1TypedRef is a valid resource backend.
var metav1TypedRef = v1.TypedLocalObjectReference{APIGroup: &storageGroup, Kind: "StorageBucket", Name: "assets"}

var storageGroup = "storage.example.com"

func TestValidateIngressUpdateKeepsStoredQuirks(t *testing.T) {
	old := validIngress()
	old.ResourceVersion = "1"
	old.Spec.TLS[0].SecretName = "Old TLS"
	old.Spec.Rules[0].Host = "*.example.com"
	old.Spec.Rules[0].HTTP.Paths[0].PathType = nil
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"x": "y"}
	checkErrors(t, ValidateIngressUpdate(upd, old))

	fresh := validIngress()
	fresh.ResourceVersion = "1"
	bad := fresh.DeepCopy()
	bad.Spec.TLS[0].SecretName = "Bad TLS"
	checkErrors(t, ValidateIngressUpdate(bad, fresh), want{field.ErrorTypeInvalid, "spec.tls[0].secretName", ""})

	relaxed := validIngress()
	relaxed.ResourceVersion = "1"
	relaxed.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "1web"
	again := relaxed.DeepCopy()
	checkErrors(t, ValidateIngressUpdate(again, relaxed))
}

func TestValidateIngressStatusUpdate(t *testing.T) {
	old := validIngress()
	old.ResourceVersion = "1"
	for name, tc := range map[string]struct {
		lb    []networkingv1.IngressLoadBalancerIngress
		wants []want
	}{
		"ip":               {[]networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.1"}}, nil},
		"hostname":         {[]networkingv1.IngressLoadBalancerIngress{{Hostname: "lb.example"}}, nil},
		"bad ip":           {[]networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0"}}, []want{{field.ErrorTypeInvalid, "status.loadBalancer.ingress[0].ip", "must be a valid IP address"}}},
		"hostname is ip":   {[]networkingv1.IngressLoadBalancerIngress{{Hostname: "10.0.0.1"}}, []want{{field.ErrorTypeInvalid, "status.loadBalancer.ingress[0].hostname", "must be a DNS name, not an IP address"}}},
		"hostname not dns": {[]networkingv1.IngressLoadBalancerIngress{{Hostname: "LB_1"}}, []want{{field.ErrorTypeInvalid, "status.loadBalancer.ingress[0].hostname", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			upd := old.DeepCopy()
			upd.Status.LoadBalancer.Ingress = tc.lb
			checkErrors(t, ValidateIngressStatusUpdate(upd, old), tc.wants...)
		})
	}
	upd := old.DeepCopy()
	upd.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "010.000.000.001"}}
	if w := IngressStatusWarnings(upd); len(w) == 0 {
		t.Error("no warning for a non-canonical IP")
	}
}

func TestIngressWarnings(t *testing.T) {
	ing := validIngress()
	ing.Spec.IngressClassName = nil
	ing.Annotations = map[string]string{IngressClassAnnotation: "berth"}
	if w := IngressWarnings(ing); len(w) != 1 || w[0] != `annotation "kubernetes.io/ingress.class" is deprecated, please use 'spec.ingressClassName' instead` {
		t.Errorf("warnings = %q", w)
	}
	if w := IngressWarnings(validIngress()); len(w) != 0 {
		t.Errorf("warnings for a class name = %q", w)
	}
}

func TestValidateIngressClass(t *testing.T) {
	ns, cluster, other := networkingv1.IngressClassParametersReferenceScopeNamespace, networkingv1.IngressClassParametersReferenceScopeCluster, "Global"
	nsName, group := "kube-system", "example.com"
	valid := func() *networkingv1.IngressClass {
		return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "berth"}, Spec: networkingv1.IngressClassSpec{Controller: "berth.dev/ingress"}}
	}
	long := "example.com/" + string(make([]byte, 250))
	for name, tc := range map[string]struct {
		mutate func(*networkingv1.IngressClass)
		wants  []want
	}{
		"valid":              {func(*networkingv1.IngressClass) {}, nil},
		"controller missing": {func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "" }, []want{{field.ErrorTypeRequired, "spec.controller", ""}}},
		"controller not prefixed": {func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "berth" },
			[]want{{field.ErrorTypeInvalid, "spec.controller", "must be a domain-prefixed path"}}},
		"controller too long": {func(ic *networkingv1.IngressClass) { ic.Spec.Controller = long },
			[]want{{field.ErrorTypeTooLong, "spec.controller", ""}, {field.ErrorTypeInvalid, "spec.controller", ""}}},
		"cluster parameters": {func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{APIGroup: &group, Kind: "Config", Name: "c", Scope: &cluster}
		}, nil},
		"namespace parameters": {func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "ConfigMap", Name: "c", Scope: &ns, Namespace: &nsName}
		}, nil},
		"namespace scope without namespace": {func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "ConfigMap", Name: "c", Scope: &ns}
		}, []want{{field.ErrorTypeRequired, "spec.parameters.namespace", "`parameters.scope` is set to 'Namespace'"}}},
		"cluster scope with namespace": {func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "Config", Name: "c", Scope: &cluster, Namespace: &nsName}
		}, []want{{field.ErrorTypeForbidden, "spec.parameters.namespace", "`parameters.scope` is set to 'Cluster'"}}},
		"unknown scope": {func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "Config", Name: "c", Scope: &other}
		}, []want{{field.ErrorTypeNotSupported, "spec.parameters.scope", ""}}},
		"no scope": {func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "Config", Name: "c"}
		}, []want{{field.ErrorTypeRequired, "spec.parameters.scope", ""}}},
		"parameters without kind and name": {func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Scope: &cluster}
		}, []want{{field.ErrorTypeRequired, "spec.parameters.kind", ""}, {field.ErrorTypeRequired, "spec.parameters.name", ""}}},
		"parameters kind with a slash": {func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "a/b", Name: "c", Scope: &cluster}
		}, []want{{field.ErrorTypeInvalid, "spec.parameters.kind", "may not contain '/'"}}},
	} {
		t.Run(name, func(t *testing.T) {
			ic := valid()
			tc.mutate(ic)
			checkErrors(t, ValidateIngressClass(ic), tc.wants...)
		})
	}
	old := valid()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Spec.Controller = "example.com/other"
	checkErrors(t, ValidateIngressClassUpdate(upd, old), want{field.ErrorTypeInvalid, "spec.controller", "field is immutable"})
}
