package envsource

import (
	"context"
	"errors"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"berth/agent/containerconfig"
	"berth/agent/volumes"
)

func ptr[T any](v T) *T { return &v }

// staticServices is a Services over a fixed list.
type staticServices struct {
	list   []*v1.Service
	synced bool
}

func (s staticServices) List() ([]*v1.Service, error) { return s.list, nil }
func (s staticServices) HasSynced() bool              { return s.synced }

func objectsOf(t *testing.T, objs ...runtime.Object) Objects {
	t.Helper()
	src, err := volumes.NewClientSource(fake.NewSimpleClientset(objs...))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestFill(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "1", "b": "2"}}
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sec"}, Data: map[string][]byte{"k": []byte("s3cret")}}
	other := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "cm2"}, Data: map[string]string{"x": "y"}}
	cmKey := func(name, key string, optional bool) v1.EnvVar {
		return v1.EnvVar{Name: "V", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}}
	}
	secKey := func(name, key string, optional bool) v1.EnvVar {
		return v1.EnvVar{Name: "S", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}}
	}
	for _, tc := range []struct {
		name       string
		objects    Objects
		c          v1.Container
		wantFrom   []containerconfig.EnvVar
		wantValues map[string]string
		wantErr    string
	}{
		{
			name:    "envFrom configMap with and without prefix, and a secret",
			objects: objectsOf(t, cm, sec),
			c: v1.Container{EnvFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}},
				{Prefix: "p-", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}},
				{Prefix: "$_-", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
			}},
			wantFrom:   []containerconfig.EnvVar{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}, {Name: "p-a", Value: "1"}, {Name: "p-b", Value: "2"}, {Name: "$_-k", Value: "s3cret"}},
			wantValues: map[string]string{},
		},
		{
			name:    "optional envFrom source missing is skipped",
			objects: objectsOf(t),
			c: v1.Container{EnvFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Optional: ptr(true)}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Optional: ptr(true)}},
			}},
			wantValues: map[string]string{},
		},
		{
			name:    "required envFrom configMap missing",
			objects: objectsOf(t),
			c:       v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}},
			wantErr: `configmap "cm" not found`,
		},
		{
			name:    "required envFrom secret missing",
			objects: objectsOf(t),
			c:       v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}}}},
			wantErr: `secret "sec" not found`,
		},
		{
			name:       "keys of a configMap and a secret",
			objects:    objectsOf(t, cm, sec),
			c:          v1.Container{Env: []v1.EnvVar{cmKey("cm", "b", false), secKey("sec", "k", false), {Name: "L", Value: "literal"}}},
			wantValues: map[string]string{"V": "2", "S": "s3cret"},
		},
		{
			name:    "missing configMap key",
			objects: objectsOf(t, cm),
			c:       v1.Container{Env: []v1.EnvVar{cmKey("cm", "nope", false)}},
			wantErr: "couldn't find key nope in ConfigMap ns/cm",
		},
		{
			name:    "missing secret key",
			objects: objectsOf(t, sec),
			c:       v1.Container{Env: []v1.EnvVar{secKey("sec", "nope", false)}},
			wantErr: "couldn't find key nope in Secret ns/sec",
		},
		{
			name:    "missing configMap for a key",
			objects: objectsOf(t),
			c:       v1.Container{Env: []v1.EnvVar{cmKey("cm", "a", false)}},
			wantErr: `configmap "cm" not found`,
		},
		{
			name:    "an object of another namespace is not found",
			objects: objectsOf(t, other),
			c:       v1.Container{Env: []v1.EnvVar{cmKey("cm2", "x", false)}},
			wantErr: `configmap "cm2" not found`,
		},
		{
			name:       "optional key and optional object missing are left out",
			objects:    objectsOf(t, cm),
			c:          v1.Container{Env: []v1.EnvVar{cmKey("cm", "nope", true), secKey("sec", "k", true)}},
			wantValues: map[string]string{},
		},
		{
			name:    "standalone: a configMap reference fails as the kubelet's without a client",
			c:       v1.Container{Env: []v1.EnvVar{cmKey("cm", "a", true)}},
			wantErr: "couldn't get configMap ns/cm, no kubeClient defined",
		},
		{
			name:    "standalone: a secret reference fails as the kubelet's without a client",
			c:       v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}}}},
			wantErr: "couldn't get secret ns/sec, no kubeClient defined",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Config{Objects: tc.objects})
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
			var opts containerconfig.Options
			err := r.Fill(context.Background(), pod, &tc.c, &opts)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(opts.EnvFrom, tc.wantFrom) {
				t.Errorf("EnvFrom = %v, want %v", opts.EnvFrom, tc.wantFrom)
			}
			if !reflect.DeepEqual(opts.EnvValues, tc.wantValues) {
				t.Errorf("EnvValues = %v, want %v", opts.EnvValues, tc.wantValues)
			}
		})
	}
}

// TestFillBuildsTheEnvironment checks the resolved options through
// containerconfig.Env: env overrides envFrom, and $(VAR) sees both.
func TestFillBuildsTheEnvironment(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"A": "from-cm", "B": "b"}}
	r := New(Config{Objects: objectsOf(t, cm)})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	c := v1.Container{Name: "c", Image: "i",
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
		Env: []v1.EnvVar{
			{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "B"}}},
			{Name: "C", Value: "$(A)-$(B)"},
		}}
	pod.Spec.Containers = []v1.Container{c}
	var opts containerconfig.Options
	if err := r.Fill(context.Background(), pod, &c, &opts); err != nil {
		t.Fatal(err)
	}
	env, err := containerconfig.Env(pod, &c, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []containerconfig.EnvVar{{Name: "A", Value: "b"}, {Name: "B", Value: "b"}, {Name: "C", Value: "b-b"}}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env = %v, want %v", env, want)
	}
}

func TestServiceEnv(t *testing.T) {
	svc := func(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	kubernetesSvc := svc("default", "kubernetes", "10.0.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP})
	fooSvc := svc("ns", "foo-bar", "10.0.0.5", v1.ServicePort{Port: 80}, v1.ServicePort{Name: "dns-udp", Port: 53, Protocol: v1.ProtocolUDP})
	list := []*v1.Service{
		kubernetesSvc, fooSvc,
		svc("ns", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.com"}},
		svc("other", "elsewhere", "10.0.0.9", v1.ServicePort{Port: 80}),
		svc("default", "notmaster", "10.0.0.10", v1.ServicePort{Port: 80}),
	}
	kubeVars := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.0.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.0.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.0.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.0.0.1",
	}
	fooVars := map[string]string{
		"FOO_BAR_SERVICE_HOST":         "10.0.0.5",
		"FOO_BAR_SERVICE_PORT":         "80",
		"FOO_BAR_SERVICE_PORT_DNS_UDP": "53",
		"FOO_BAR_PORT":                 "tcp://10.0.0.5:80",
		"FOO_BAR_PORT_80_TCP":          "tcp://10.0.0.5:80",
		"FOO_BAR_PORT_80_TCP_PROTO":    "tcp",
		"FOO_BAR_PORT_80_TCP_PORT":     "80",
		"FOO_BAR_PORT_80_TCP_ADDR":     "10.0.0.5",
		"FOO_BAR_PORT_53_UDP":          "udp://10.0.0.5:53",
		"FOO_BAR_PORT_53_UDP_PROTO":    "udp",
		"FOO_BAR_PORT_53_UDP_PORT":     "53",
		"FOO_BAR_PORT_53_UDP_ADDR":     "10.0.0.5",
	}
	merge := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		ns    string
		links *bool
		want  map[string]string
	}{
		{"links enabled by default", "ns", nil, merge(kubeVars, fooVars)},
		{"links enabled", "ns", ptr(true), merge(kubeVars, fooVars)},
		{"links disabled: only the kubernetes service", "ns", ptr(false), kubeVars},
		{"the default namespace", "default", ptr(true), merge(kubeVars, ServiceVars(list[5]))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Config{Services: staticServices{list: list, synced: true}})
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "p"}, Spec: v1.PodSpec{EnableServiceLinks: tc.links}}
			var opts containerconfig.Options
			if err := r.Fill(context.Background(), pod, &v1.Container{}, &opts); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(opts.ServiceEnv, tc.want) {
				t.Errorf("ServiceEnv = %v\nwant %v", opts.ServiceEnv, tc.want)
			}
		})
	}

	t.Run("waits for the first list, but not for a static pod", func(t *testing.T) {
		r := New(Config{Services: staticServices{list: list}})
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
		var opts containerconfig.Options
		err := r.Fill(context.Background(), pod, &v1.Container{}, &opts)
		if want := "services have not yet been read at least once, cannot construct envvars"; err == nil || err.Error() != want {
			t.Fatalf("error = %v, want %q", err, want)
		}
		pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		if err := r.Fill(context.Background(), pod, &v1.Container{}, &opts); err != nil {
			t.Fatalf("static pod: %v", err)
		}
	})
}

// TestFillKeepsTheAPIErrorMessage: a refused read shows the apiserver's
// message alone, as the kubelet's.
func TestFillKeepsTheAPIErrorMessage(t *testing.T) {
	client := fake.NewSimpleClientset()
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("no relationship found between node 'n' and this object"))
	})
	src, err := volumes.NewClientSource(client)
	if err != nil {
		t.Fatal(err)
	}
	c := v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Optional: ptr(true)}}}}
	var opts containerconfig.Options
	err = New(Config{Objects: src}).Fill(context.Background(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}, &c, &opts)
	want := `configmaps "cm" is forbidden: no relationship found between node 'n' and this object`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q (an optional source is skipped only when missing)", err, want)
	}
}
