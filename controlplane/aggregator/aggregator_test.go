package aggregator

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAuthenticationData: kube-apiserver's keys and formats.
func TestAuthenticationData(t *testing.T) {
	a := &Aggregator{cfg: Config{ClientCAPEM: []byte("client-ca"), FrontProxyCAPEM: []byte("proxy-ca")}}
	want := map[string]string{
		"client-ca-file":                     "client-ca",
		"requestheader-client-ca-file":       "proxy-ca",
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-uid-headers":          `["X-Remote-Uid"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	}
	got := a.authenticationData()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("keys %v", got)
	}
}

// TestLocalAPIServices: upstream's priorities, automanaged on start; the
// metrics group left to the administrator.
func TestLocalAPIServices(t *testing.T) {
	apps := localAPIService(schema.GroupVersion{Group: "apps", Version: "v1"})
	if apps.Name != "v1.apps" || apps.Spec.GroupPriorityMinimum != 17800 || apps.Spec.VersionPriority != 15 ||
		apps.Labels[AutomanagedLabel] != "onstart" || apps.Spec.Service != nil {
		t.Errorf("v1.apps: %+v", apps)
	}
	if core := localAPIService(schema.GroupVersion{Version: "v1"}); core.Name != "v1." || core.Spec.GroupPriorityMinimum != 18000 {
		t.Errorf("v1.: %+v", core)
	}
	if m := localAPIService(schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}); m != nil {
		t.Errorf("metrics.k8s.io is automanaged: %+v", m)
	}
}
