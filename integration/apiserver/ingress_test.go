package apiserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// TestIngressAPI: networking.k8s.io/v1 ingresses and ingressclasses in
// discovery; `kubectl create ingress` and `kubectl get ingress`
// (NAME CLASS HOSTS ADDRESS PORTS AGE) and `kubectl get ingressclass`;
// upstream's validation messages; /status writable with its metadata but
// not the spec; kubectl explain from the OpenAPI documents.
func TestIngressAPI(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "ingress-api"
	admissionNamespace(t, cs, ns, nil)
	k := func(args ...string) string {
		t.Helper()
		out, errOut, err := shared.kubectl(t, "1.34", "", args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, errOut)
		}
		return out
	}

	res, err := cs.Discovery().ServerResourcesForGroupVersion("networking.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res.APIResources {
		names = append(names, r.Name)
		if r.Name == "ingresses" && (!r.Namespaced || !slices.Equal(r.ShortNames, []string{"ing"})) {
			t.Errorf("ingresses: %+v", r)
		}
		if r.Name == "ingressclasses" && r.Namespaced {
			t.Errorf("ingressclasses namespaced: %+v", r)
		}
	}
	for _, want := range []string{"ingresses", "ingresses/status", "ingressclasses"} {
		if !slices.Contains(names, want) {
			t.Fatalf("networking.k8s.io/v1 serves %v, no %s", names, want)
		}
	}

	classYAML := `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: api-test}
spec:
  controller: example.com/ingress
  parameters: {kind: Config, name: p}
`
	if out, errOut, err := shared.kubectl(t, "1.34", classYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply class: %v %s %s", err, out, errOut)
	}
	t.Cleanup(func() { _ = cs.NetworkingV1().IngressClasses().Delete(context.Background(), "api-test", metav1.DeleteOptions{}) })
	class, err := cs.NetworkingV1().IngressClasses().Get(ctx, "api-test", metav1.GetOptions{})
	if err != nil || class.Spec.Parameters.Scope == nil || *class.Spec.Parameters.Scope != "Cluster" || class.Generation != 1 {
		t.Fatalf("class (parameters scope defaults to Cluster): %+v %v", class, err)
	}
	if out := k("get", "ingressclass", "api-test"); !strings.Contains(out, "NAME") || !strings.Contains(out, "CONTROLLER") ||
		!strings.Contains(out, "PARAMETERS") || !strings.Contains(out, "example.com/ingress") || !strings.Contains(out, "Config/p") {
		t.Errorf("kubectl get ingressclass:\n%s", out)
	}

	k("-n", ns, "create", "ingress", "web", "--class=api-test",
		"--rule=web.example/=web:80", "--rule=web.example/api*=api:http", "--rule=secure.example/=web:80,tls=web-tls")
	ing, err := cs.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ing.Spec.Rules) != 2 || len(ing.Spec.TLS) != 1 || *ing.Spec.Rules[0].HTTP.Paths[1].PathType != networkingv1.PathTypePrefix ||
		ing.Spec.Rules[0].HTTP.Paths[1].Backend.Service.Port.Name != "http" || ing.Generation != 1 {
		t.Fatalf("created ingress: %+v", ing.Spec)
	}
	out := k("-n", ns, "get", "ingress", "web")
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if !slices.Equal(header, []string{"NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"}) ||
		!strings.Contains(out, "api-test") || !strings.Contains(out, "web.example,secure.example") || !strings.Contains(out, "80, 443") {
		t.Errorf("kubectl get ingress:\n%s", out)
	}

	// /status takes the status and metadata, keeps the spec.
	w, err := cs.NetworkingV1().Ingresses(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: ing.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	patched, err := cs.NetworkingV1().Ingresses(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patchedstatus":"true"}},"spec":{"ingressClassName":"other"},"status":{"loadBalancer":{"ingress":[{"ip":"10.9.0.1"}]}}}`),
		metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if patched.Annotations["patchedstatus"] != "true" || *patched.Spec.IngressClassName != "api-test" || patched.Status.LoadBalancer.Ingress[0].IP != "10.9.0.1" {
		t.Fatalf("status patch: %+v", patched)
	}
	if ev := nextEventOf(t, w, watch.Modified); ev.Object.(*networkingv1.Ingress).Status.LoadBalancer.Ingress[0].IP != "10.9.0.1" {
		t.Errorf("watch event: %+v", ev.Object)
	}
	if out := k("-n", ns, "get", "ingress", "web"); !strings.Contains(out, "10.9.0.1") {
		t.Errorf("ADDRESS missing:\n%s", out)
	}
	// The main resource ignores a status and keeps the generation for a
	// metadata change.
	patched.Status.LoadBalancer.Ingress[0].IP = "10.9.0.2"
	patched.Labels = map[string]string{"x": "y"}
	upd, err := cs.NetworkingV1().Ingresses(ns).Update(ctx, patched, metav1.UpdateOptions{})
	if err != nil || upd.Status.LoadBalancer.Ingress[0].IP != "10.9.0.1" || upd.Generation != 1 {
		t.Fatalf("update with status: %+v %v", upd, err)
	}
	_, err = cs.NetworkingV1().Ingresses(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"status":{"loadBalancer":{"ingress":[{"hostname":"10.9.0.3"}]}}}`), metav1.PatchOptions{}, "status")
	wantInvalid(t, err, "status.loadBalancer.ingress[0].hostname", "must be a DNS name, not an IP address")

	// Validation, as kubectl shows it.
	bad := `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad}
spec:
  rules:
  - host: "10.0.0.1"
    http:
      paths:
      - path: /a
        backend:
          service: {name: web, port: {number: 80}}
          resource: {kind: Bucket, name: b}
`
	_, errOut, err := shared.kubectl(t, "1.34", bad, "-n", ns, "create", "-f", "-")
	for _, want := range []string{
		`spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address`,
		`spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified`,
	} {
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("bad ingress: %v, stderr lacks %q:\n%s", err, want, errOut)
		}
	}
	_, err = cs.NetworkingV1().Ingresses(ns).Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec", "either `defaultBackend` or `rules` must be specified")
	class.Spec.Controller = "example.com/other"
	_, err = cs.NetworkingV1().IngressClasses().Update(ctx, class, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.controller", "field is immutable")

	if out := k("explain", "ingress.spec.rules.http.paths.pathType"); !strings.Contains(out, "Prefix") || !strings.Contains(out, "Exact") {
		t.Errorf("kubectl explain:\n%s", out)
	}
	if out := k("explain", "ingressclass.spec.controller"); !strings.Contains(out, "controller") {
		t.Errorf("kubectl explain ingressclass:\n%s", out)
	}

	if err := cs.NetworkingV1().Ingresses(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after deletecollection: %v", err)
	}
}

// TestDefaultIngressClassAdmission: an Ingress naming no class gets the
// class annotated ingressclass.kubernetes.io/is-default-class (of
// several, the newest); one naming a class (or the deprecated annotation) keeps it.
func TestDefaultIngressClassAdmission(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "adm-ingressclass"
	admissionNamespace(t, cs, ns, nil)
	classes := cs.NetworkingV1().IngressClasses()
	ingresses := cs.NetworkingV1().Ingresses(ns)
	mkClass := func(name string) {
		t.Helper()
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
			Spec: networkingv1.IngressClassSpec{Controller: "example.com/" + name}}
		if _, err := classes.Create(ctx, ic, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	backend := &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	// createdClass creates an Ingress (a dry run) until its class is want:
	// the plugin reads an informer's cache, which follows the class's
	// creation within moments.
	createdClass := func(annotations map[string]string, class *string, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: annotations},
				Spec: networkingv1.IngressSpec{DefaultBackend: backend, IngressClassName: class}}
			got, err := ingresses.Create(ctx, ing, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got.Spec.IngressClassName != nil {
				name = *got.Spec.IngressClassName
			}
			if name == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("ingress class %q, want %q", name, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	createdClass(nil, nil, "")
	mkClass("adm-default-z")
	createdClass(nil, nil, "adm-default-z")
	// Newer, or as old and a lower name: chosen either way (the unit
	// tests tell the two rules apart).
	mkClass("adm-default-a")
	createdClass(nil, nil, "adm-default-a")
	mine := "mine"
	createdClass(nil, &mine, "mine")
	createdClass(map[string]string{"kubernetes.io/ingress.class": "legacy"}, nil, "")
}
