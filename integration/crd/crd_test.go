package crd_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"berth/integration/harness"
	"berth/internal/testpki"
)

var (
	widgetsV1 = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetsV2 = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
)

// widgetCRD is a namespaced CRD served in v1 (stored) and v2, where v1's
// spec.size is v2's spec.widgetSize; the webhook at url converts.
func widgetCRD(url string, caBundle []byte) *apiextensionsv1.CustomResourceDefinition {
	subs := &apiextensionsv1.CustomResourceSubresources{
		Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
	}
	status := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ShortNames: []string{"wd"}},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
				ConversionReviewVersions: []string{"v1"},
			}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Subresources: subs,
					AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
						{Name: "Size", Type: "string", JSONPath: ".spec.size"},
						{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
					},
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {Type: "object",
								XValidations: apiextensionsv1.ValidationRules{{Rule: "self.replicas <= 10", Message: "replicas must be at most 10"}},
								Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"size":     {Type: "string", Description: "The widget's size.", Default: &apiextensionsv1.JSON{Raw: []byte(`"medium"`)}},
									"replicas": {Type: "integer", Minimum: ptr.To(0.0)},
									"port":     {XIntOrString: true},
									"template": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: ptr.To(true)},
								}},
							"status": status,
						},
					}}},
				{Name: "v2", Served: true, Subresources: subs,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"widgetSize": {Type: "string"},
								"replicas":   {Type: "integer"},
								"port":       {XIntOrString: true},
								"template":   {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: ptr.To(true)},
							}},
							"status": status,
						},
					}}},
			},
		},
	}
}

// conversionWebhook serves ConversionReviews over TLS on 127.0.0.1,
// renaming v1's spec.size to v2's spec.widgetSize and back; it returns the
// URL, the CA bundle and the number of reviews answered.
func conversionWebhook(t *testing.T) (string, []byte, *atomic.Int64) {
	t.Helper()
	ca := testpki.NewCA(t, "widget-converter-ca")
	var calls atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/convert", func(w http.ResponseWriter, r *http.Request) {
		review := &apiextensionsv1.ConversionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw.Raw); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			from, to := "size", "widgetSize"
			if review.Request.DesiredAPIVersion == "example.com/v1" {
				from, to = "widgetSize", "size"
			}
			if v, ok, _ := unstructured.NestedString(u.Object, "spec", from); ok {
				unstructured.RemoveNestedField(u.Object, "spec", from)
				_ = unstructured.SetNestedField(u.Object, v, "spec", to)
			}
			u.SetAPIVersion(review.Request.DesiredAPIVersion)
			data, _ := u.MarshalJSON()
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	})
	port := testpki.ServeTLS(t, mux, &tls.Config{Certificates: []tls.Certificate{ca.Serving(t, "127.0.0.1")}})
	return fmt.Sprintf("https://127.0.0.1:%d/convert", port), ca.CertPEM, &calls
}

func TestWidgetCRD(t *testing.T) {
	ctx := context.Background()
	cfg := shared.RESTConfig(t)
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	dyn := dynamic.NewForConfigOrDie(cfg)
	url, ca, calls := conversionWebhook(t)
	crd := widgetCRD(url, ca)
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD: %v", err)
	}
	mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/widgets.example.com")
	got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.NamesAccepted, apiextensionsv1.Established} {
		if !hasCondition(got, c) {
			t.Errorf("CRD condition %s is not True: %+v", c, got.Status.Conditions)
		}
	}
	if got.Status.AcceptedNames.Kind != "Widget" || len(got.Status.StoredVersions) != 1 || got.Status.StoredVersions[0] != "v1" {
		t.Errorf("accepted names %+v, stored versions %v", got.Status.AcceptedNames, got.Status.StoredVersions)
	}
	mustKubectl(t, "", "create", "namespace", "widgets")

	t.Run("StrictValidationRefusesUnknownFields", func(t *testing.T) {
		_, errOut, err := kubectl(t, widgetYAML("strict", `{replicas: 1, junk: 1}`), "create", "-n", "widgets", "-f", "-")
		if err == nil || !strings.Contains(errOut, `unknown field "spec.junk"`) {
			t.Fatalf("create with an unknown field: err %v, stderr %q; want a refusal naming spec.junk", err, errOut)
		}
	})

	// w1: defaulted (size) and pruned (junk) when validation is off.
	mustKubectl(t, widgetYAML("w1", `{replicas: 2, port: http, junk: 1, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {a: b}}}`),
		"create", "--validate=false", "-n", "widgets", "-f", "-")
	w1, err := dyn.Resource(widgetsV1).Namespace("widgets").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(w1.Object, "spec")
	if spec["size"] != "medium" || spec["junk"] != nil || spec["port"] != "http" {
		t.Errorf("w1 spec %v: want size defaulted to medium, junk pruned, port kept as a string", spec)
	}
	if kind, _, _ := unstructured.NestedString(w1.Object, "spec", "template", "kind"); kind != "ConfigMap" {
		t.Errorf("embedded resource lost its kind: %v", spec["template"])
	}

	t.Run("CELRuleRefusal", func(t *testing.T) {
		_, errOut, err := kubectl(t, "", "patch", "-n", "widgets", "widgets.v1.example.com/w1", "--type=merge", "-p", `{"spec":{"replicas":11}}`)
		if err == nil || !strings.Contains(errOut, "spec: Invalid value") || !strings.Contains(errOut, "replicas must be at most 10") {
			t.Fatalf("patch breaking the CEL rule: err %v, stderr %q", err, errOut)
		}
		_, errOut, err = kubectl(t, "", "patch", "-n", "widgets", "widgets.v1.example.com/w1", "--type=merge", "-p", `{"spec":{"replicas":-1}}`)
		if err == nil || !strings.Contains(errOut, "spec.replicas") {
			t.Fatalf("patch below the minimum: err %v, stderr %q", err, errOut)
		}
	})

	t.Run("PrinterColumns", func(t *testing.T) {
		out := mustKubectl(t, "", "get", "-n", "widgets", "widgets.v1.example.com")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SIZE REPLICAS" || strings.Join(strings.Fields(lines[1]), " ") != "w1 medium 2" {
			t.Fatalf("kubectl get widgets:\n%s", out)
		}
	})

	t.Run("Explain", func(t *testing.T) {
		out := mustKubectl(t, "", "explain", "widgets.spec.size", "--api-version=example.com/v1")
		if !strings.Contains(out, "The widget's size.") {
			t.Fatalf("kubectl explain widgets.spec.size:\n%s", out)
		}
	})

	t.Run("ScaleAndStatus", func(t *testing.T) {
		mustKubectl(t, "", "scale", "-n", "widgets", "widgets.v1.example.com/w1", "--replicas=4")
		w, err := dyn.Resource(widgetsV1).Namespace("widgets").Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); n != 4 {
			t.Fatalf("spec.replicas after kubectl scale: %d, want 4", n)
		}
		// /status writes status only.
		_ = unstructured.SetNestedField(w.Object, int64(4), "status", "replicas")
		_ = unstructured.SetNestedField(w.Object, "huge", "spec", "size")
		if _, err := dyn.Resource(widgetsV1).Namespace("widgets").UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		scale := mustKubectl(t, "", "get", "--raw", "/apis/example.com/v1/namespaces/widgets/widgets/w1/scale")
		if !strings.Contains(scale, `"status":{"replicas":4`) {
			t.Fatalf("scale after the status update: %s", scale)
		}
		w, err = dyn.Resource(widgetsV1).Namespace("widgets").Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s, _, _ := unstructured.NestedString(w.Object, "spec", "size"); s != "medium" {
			t.Fatalf("spec.size after a /status update: %q, want medium (status writes keep spec)", s)
		}
	})

	t.Run("WatchAndConversion", func(t *testing.T) {
		list, err := dyn.Resource(widgetsV2).Namespace("widgets").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before := calls.Load()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		w, err := dyn.Resource(widgetsV2).Namespace("widgets").Watch(wctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// Created in v2 (stored in v1 through the webhook), seen in v2.
		w2 := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v2", "kind": "Widget",
			"metadata": map[string]any{"name": "w2"}, "spec": map[string]any{"widgetSize": "large", "replicas": int64(1)}}}
		if _, err := dyn.Resource(widgetsV2).Namespace("widgets").Create(ctx, w2, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			u, ok := ev.Object.(*unstructured.Unstructured)
			if ev.Type != watch.Added || !ok || u.GetName() != "w2" || u.GetAPIVersion() != "example.com/v2" {
				t.Fatalf("watch event %s %#v", ev.Type, ev.Object)
			}
			if s, _, _ := unstructured.NestedString(u.Object, "spec", "widgetSize"); s != "large" {
				t.Fatalf("watched w2 spec %v", u.Object["spec"])
			}
		case <-wctx.Done():
			t.Fatal("no watch event for w2")
		}
		v1, err := dyn.Resource(widgetsV1).Namespace("widgets").Get(ctx, "w2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s, _, _ := unstructured.NestedString(v1.Object, "spec", "size"); s != "large" {
			t.Fatalf("w2 read in v1: spec %v, want size large", v1.Object["spec"])
		}
		if calls.Load() == before {
			t.Fatal("the conversion webhook was never called")
		}
	})

	t.Run("ServerSideApply", func(t *testing.T) {
		mustKubectl(t, widgetYAML("w3", `{replicas: 3}`), "apply", "--server-side", "--field-manager=tester", "-n", "widgets", "-f", "-")
		w, err := dyn.Resource(widgetsV1).Namespace("widgets").Get(ctx, "w3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		managers := map[string]bool{}
		for _, m := range w.GetManagedFields() {
			managers[m.Manager+"/"+string(m.Operation)] = true
		}
		if !managers["tester/Apply"] {
			t.Fatalf("managed fields of w3: %+v", w.GetManagedFields())
		}
		// Duplicate keys in an apply configuration are refused with
		// fieldValidation=Strict, naming the line, as upstream.
		body := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w3\nspec:\n  replicas: 3\n  replicas: 4\n"
		raw, err := apiextensionsclient.NewForConfigOrDie(cfg).Discovery().RESTClient().Patch(types.ApplyPatchType).
			AbsPath("/apis/example.com/v1/namespaces/widgets/widgets/w3").Param("fieldManager", "tester").Param("fieldValidation", "Strict").
			Body([]byte(body)).DoRaw(ctx)
		if !apierrors.IsBadRequest(err) || !strings.Contains(string(raw), `line 7: key \"replicas\" already set in map`) {
			t.Fatalf("apply with a duplicate key: %v %s", err, raw)
		}
	})

	t.Run("DeletingTheCRDRemovesItsObjects", func(t *testing.T) {
		mustKubectl(t, "", "delete", "crd", "widgets.example.com", "--timeout=60s")
		if _, err := crds.Get(ctx, crd.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("CRD after kubectl delete: %v", err)
		}
		again := widgetCRD(url, ca)
		if _, err := crds.Create(ctx, again, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = crds.Delete(ctx, again.Name, metav1.DeleteOptions{}) })
		mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/widgets.example.com")
		var items []unstructured.Unstructured
		harness.WaitFor(t, 30*time.Second, "the re-created CRD's objects to be listed", func() (bool, string) {
			list, err := dyn.Resource(widgetsV1).Namespace("widgets").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			items = list.Items
			return true, ""
		})
		if len(items) != 0 {
			t.Fatalf("objects of the deleted CRD survived: %d", len(items))
		}
	})
}

func TestClusterScopedCRD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := shared.RESTConfig(t)
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.org"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.org", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Deprecated: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}) })
	mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/gadgets.example.org")
	mustKubectl(t, "apiVersion: example.org/v1\nkind: Gadget\nmetadata: {name: g1, labels: {color: red}}\nanything: [1, 2]\n", "create", "-f", "-")
	mustKubectl(t, "apiVersion: example.org/v1\nkind: Gadget\nmetadata: {name: g2}\n", "create", "-f", "-")
	if out := mustKubectl(t, "", "get", "gadgets", "-l", "color=red", "-o", "name"); strings.TrimSpace(out) != "gadget.example.org/g1" {
		t.Errorf("label selector: %q", out)
	}
	if out := mustKubectl(t, "", "get", "gadgets", "--field-selector", "metadata.name=g2", "-o", "name"); strings.TrimSpace(out) != "gadget.example.org/g2" {
		t.Errorf("field selector: %q", out)
	}
	out, errOut, err := kubectl(t, "", "get", "gadget", "g1", "-o", "jsonpath={.anything}")
	if err != nil || out != "[1,2]" {
		t.Errorf("preserved unknown field: %q %v", out, err)
	}
	if !strings.Contains(errOut, "Warning: example.org/v1 Gadget is deprecated") {
		t.Errorf("no deprecation warning for the deprecated version: %q", errOut)
	}
	if _, errOut, err := kubectl(t, "", "get", "--raw", "/apis/example.org/v1/namespaces/default/gadgets"); err == nil {
		t.Errorf("a cluster-scoped custom resource was served in a namespace: %s", errOut)
	}
}

// widgetYAML is a v1 Widget manifest with the given flow-style spec.
func widgetYAML(name, spec string) string {
	return "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: " + name + "}\nspec: " + spec + "\n"
}

func hasCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == c {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
