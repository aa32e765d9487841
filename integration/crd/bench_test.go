package crd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"berth/integration/harness"
)

// BenchmarkCRDMemory installs 50 CRDs and 10 000 custom objects (200 each)
// into a fresh `berth server` and prints its RSS before and after, and the
// time the creates took:
//
//	go test -run '^$' -bench CRDMemory -benchtime 1x ./integration/crd/
func BenchmarkCRDMemory(b *testing.B) {
	const crdCount, perCRD, workers = 50, 200, 16
	dir, err := os.MkdirTemp("", "berth-crd-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := harness.LaunchServer(filepath.Join(dir, "server"), "--listen", "127.0.0.1:0",
		"--disable", "controllers,scheduler", "--disable-admission-plugins", "ServiceAccount")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	cfg := srv.RESTConfig(b)
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	dyn := dynamic.NewForConfigOrDie(cfg)
	idle := harness.RSS(b, srv.Pid())
	for b.Loop() {
		start := time.Now()
		for i := range crdCount {
			plural := fmt.Sprintf("things%d", i)
			crd := &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: plural + ".bench.example.com"},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "bench.example.com", Scope: apiextensionsv1.NamespaceScoped,
					Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: fmt.Sprintf("thing%d", i), Kind: fmt.Sprintf("Thing%d", i)},
					Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
						Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
						Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size": {Type: "string"}, "replicas": {Type: "integer", Minimum: ptr.To(0.0)},
								"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
							}}}}}}},
				},
			}
			if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		harness.WaitFor(b, 60*time.Second, "every CRD served", func() (bool, string) {
			for i := range crdCount {
				gvr := schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: fmt.Sprintf("things%d", i)}
				if _, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
					return false, err.Error()
				}
			}
			return true, ""
		})
		crdsDone := time.Since(start)
		jobs := make(chan int)
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range jobs {
					i := n / perCRD
					gvr := schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: fmt.Sprintf("things%d", i)}
					obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.example.com/v1", "kind": fmt.Sprintf("Thing%d", i),
						"metadata": map[string]any{"name": fmt.Sprintf("t%d", n)},
						"spec":     map[string]any{"size": "medium", "replicas": int64(n % 7), "labels": map[string]any{"app": "bench"}}}}
					if _, err := dyn.Resource(gvr).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
						// Keep draining the jobs: the feeder must not block.
						select {
						case errs <- err:
						default:
						}
					}
				}
			}()
		}
		objStart := time.Now()
		for n := range crdCount * perCRD {
			jobs <- n
		}
		close(jobs)
		wg.Wait()
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		objs := time.Since(objStart)
		after := harness.RSS(b, srv.Pid())
		b.Logf("\n| what | value |\n| --- | --- |\n| berth server RSS, idle | %d MiB |\n| 50 CRDs created and served | %v |\n| 10000 custom objects created (%d workers) | %v (%.0f/s) |\n| berth server RSS, 50 CRDs + 10000 objects | %d MiB |",
			idle>>20, crdsDone.Round(time.Millisecond), workers, objs.Round(time.Millisecond), float64(crdCount*perCRD)/objs.Seconds(), after>>20)
	}
}
