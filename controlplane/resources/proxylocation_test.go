package resources

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func TestPodProxyLocation(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "noports"},
			{Name: "a", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "tls", ContainerPort: 8443}}},
		}},
		Status: corev1.PodStatus{PodIP: "10.244.0.7"},
	}
	noPorts := pod.DeepCopy()
	noPorts.Spec.Containers = noPorts.Spec.Containers[:1]
	v6 := noPorts.DeepCopy()
	v6.Status.PodIP = "fd00::7"
	noIP := pod.DeepCopy()
	noIP.Status.PodIP = ""
	loopback := pod.DeepCopy()
	loopback.Status.PodIP = "127.0.0.1"
	for _, tc := range []struct {
		name, id string
		pod      *corev1.Pod
		want     string
		code     int32
		msg      string
	}{
		{name: "first declared port", id: "web", pod: pod, want: "//10.244.0.7:8080"},
		{name: "port number", id: "web:9000", pod: pod, want: "//10.244.0.7:9000"},
		{name: "named container port", id: "web:tls", pod: pod, want: "//10.244.0.7:8443"},
		{name: "https scheme", id: "https:web:8443", pod: pod, want: "https://10.244.0.7:8443"},
		{name: "no ports: scheme default", id: "web", pod: noPorts, want: "//10.244.0.7"},
		{name: "ipv6 without port", id: "web", pod: v6, want: "//[fd00::7]"},
		{name: "ipv6 with port", id: "web:80", pod: v6, want: "//[fd00::7]:80"},
		{name: "unknown port name", id: "web:nope", pod: pod, code: 503, msg: `no such port "nope" on pod "web"`},
		{name: "port out of range is a name", id: "web:70000", pod: pod, code: 503, msg: "no such port"},
		{name: "no pod IP", id: "web:80", pod: noIP, code: 400, msg: "address not allowed"},
		{name: "loopback pod IP", id: "web:80", pod: loopback, code: 400, msg: "address not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := parseProxyID("pod", tc.id)
			if err != nil {
				t.Fatal(err)
			}
			loc, err := podProxyLocation(tc.pod, id)
			checkLocation(t, loc, err, tc.want, tc.code, tc.msg)
		})
	}
}

func TestParseProxyID(t *testing.T) {
	for _, id := range []string{"a:b:c:d", "ftp:web:80", ":80", ""} {
		_, err := parseProxyID("pod", id)
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `invalid pod request "`+id+`"`) {
			t.Errorf("parseProxyID(%q) = %v, want 400 invalid pod request", id, err)
		}
	}
}

func TestServicePortName(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}, {Name: "tls", Port: 443}}}}
	if name, err := servicePortName(svc, 443); err != nil || name != "tls" {
		t.Errorf("port 443 = %q, %v; want tls", name, err)
	}
	_, err := servicePortName(svc, 81)
	checkLocation(t, nil, err, "", 503, `no service port 81 found for service "svc"`)
}

func TestServiceProxyLocation(t *testing.T) {
	ref := func(name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name}
	}
	pods := map[string]*corev1.Pod{
		"p1": {Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.244.0.1"}}}},
		"p2": {Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.244.0.2"}}}},
	}
	isPod := func(a corev1.EndpointAddress) bool {
		return endpointIsPod(a, "ns", func(name string) *corev1.Pod { return pods[name] })
	}
	eps := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "svc"},
		Subsets: []corev1.EndpointSubset{
			{NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.244.0.9", TargetRef: ref("p9")}}, Ports: []corev1.EndpointPort{{Name: "web", Port: 8080}}},
			{
				Addresses: []corev1.EndpointAddress{
					{IP: "169.254.169.254"},                  // not a pod: never proxied to
					{IP: "10.244.0.3", TargetRef: ref("p1")}, // p1 has another IP
					{IP: "10.244.0.1", TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "other", Name: "p1"}}, // another namespace
					{IP: "10.244.0.2", TargetRef: ref("p2")},
				},
				Ports: []corev1.EndpointPort{{Name: "web", Port: 8080}, {Name: "tls", Port: 8443}},
			},
		},
	}
	for _, tc := range []struct {
		name, scheme, port string
		eps                *corev1.Endpoints
		want               string
		code               int32
		msg                string
	}{
		{name: "the one valid pod address, whatever the start", port: "web", eps: eps, want: "//10.244.0.2:8080"},
		{name: "https and another port", scheme: "https", port: "tls", eps: eps, want: "https://10.244.0.2:8443"},
		{name: "no such port", port: "nope", eps: eps, code: 503, msg: `no endpoints available for service "svc:nope"`},
		{name: "no subsets", port: "web", eps: &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "svc"}}, code: 503, msg: `no endpoints available for service "svc"`},
	} {
		for start := 0; start < 4; start++ {
			t.Run(tc.name, func(t *testing.T) {
				intn := func(n int) int { return start % n }
				id := "svc"
				if tc.port != "" {
					id += ":" + tc.port
				}
				loc, err := serviceProxyLocation(tc.eps, tc.scheme, tc.port, id, isPod, intn)
				checkLocation(t, loc, err, tc.want, tc.code, tc.msg)
			})
		}
	}
}

func TestNodeProxyLocation(t *testing.T) {
	node := func(addr string, port int32) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		if addr != "" {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1.example"}, {Type: corev1.NodeInternalIP, Address: addr}}
		}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
		return n
	}
	hostname := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n2.example"}}}}
	lookup := func(_ context.Context, host string) ([]net.IP, error) {
		switch host {
		case "n2.example":
			return []net.IP{net.ParseIP("192.0.2.20"), net.ParseIP("127.0.0.1")}, nil
		}
		return lookupHost(context.Background(), host)
	}
	for _, tc := range []struct {
		name, id string
		node     *corev1.Node
		want     string
		agent    bool
		code     int32
		msg      string
	}{
		{name: "agent, default port", id: "n1", node: node("192.0.2.10", 0), want: "https://192.0.2.10:10250", agent: true},
		{name: "agent port named explicitly", id: "n1:10250", node: node("192.0.2.10", 0), want: "https://192.0.2.10:10250", agent: true},
		{name: "agent on its daemon endpoint port", id: "n1", node: node("192.0.2.10", 11250), want: "https://192.0.2.10:11250", agent: true},
		{name: "another port: the proxy transport", id: "n1:8080", node: node("192.0.2.10", 0), want: "//192.0.2.10:8080"},
		{name: "another port over https", id: "https:n1:8443", node: node("192.0.2.10", 0), want: "https://192.0.2.10:8443"},
		{name: "port name refused", id: "n1:http", node: node("192.0.2.10", 0), code: 400, msg: "is not a port number"},
		{name: "loopback address refused", id: "n1", node: node("127.0.0.1", 0), code: 400, msg: "address not allowed"},
		{name: "link-local address refused", id: "n1:80", node: node("169.254.169.254", 0), code: 400, msg: "address not allowed"},
		{name: "a hostname resolving to loopback refused", id: "n2", node: hostname, code: 400, msg: "address not allowed"},
		{name: "no address", id: "n1", node: node("", 0), code: 503, msg: "node n1 has no address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := parseProxyID("node", tc.id)
			if err != nil {
				t.Fatal(err)
			}
			loc, agent, err := nodeProxyLocation(context.Background(), tc.node, id, lookup)
			checkLocation(t, loc, err, tc.want, tc.code, tc.msg)
			if err == nil && agent != tc.agent {
				t.Errorf("agent transport = %v, want %v", agent, tc.agent)
			}
		})
	}
}

func TestProxySubpath(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/api/v1/namespaces/ns/pods/web/proxy", ""},
		{"/api/v1/namespaces/ns/pods/web/proxy/", "/"},
		{"/api/v1/namespaces/ns/pods/web:80/proxy/a/b", "/a/b"},
		{"/api/v1/namespaces/ns/pods/web/proxy/a/b/", "/a/b/"},
		{"/api/v1/nodes/n1/proxy/logs/", "/logs/"},
	} {
		r, _ := http.NewRequest(http.MethodGet, "https://x"+tc.path, nil)
		f := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
		info, err := f.NewRequestInfo(r)
		if err != nil {
			t.Fatal(err)
		}
		if info.Subresource != "proxy" {
			t.Fatalf("%s: subresource %q, want proxy", tc.path, info.Subresource)
		}
		if got := proxySubpath(info); got != tc.want {
			t.Errorf("%s: subpath %q, want %q", tc.path, got, tc.want)
		}
	}
}

func checkLocation(t *testing.T, loc interface{ String() string }, err error, want string, code int32, msg string) {
	t.Helper()
	if code != 0 {
		var st apierrors.APIStatus
		if !errors.As(err, &st) || st.Status().Code != code || !strings.Contains(err.Error(), msg) {
			t.Fatalf("error %v, want %d %q", err, code, msg)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.String(); got != want {
		t.Errorf("location %s, want %s", got, want)
	}
}
