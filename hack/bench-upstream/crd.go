package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// crdPlan is the custom-resource benchmark's sizes.
type crdPlan struct {
	crds, objects int
}

// crdRound is one side's figures with CRDs installed and custom objects
// created.
type crdRound struct {
	Side    string `json:"side"`
	CRDs    int    `json:"crds"`
	Objects int    `json:"objects"`
	// ServedSec: from the first CRD create to every CRD's resource
	// answering a LIST.
	ServedSec     float64            `json:"servedSec"`
	CreatedPerSec float64            `json:"createdPerSec"`
	CreateP50Ms   float64            `json:"createP50Ms"`
	CreateP99Ms   float64            `json:"createP99Ms"`
	ListP50Ms     float64            `json:"listP50Ms"` // LIST of one CRD's objects
	IdleRSSMiB    float64            `json:"idleRSSMiB"`
	RSSMiB        float64            `json:"rssMiB"`
	RSSByProc     map[string]float64 `json:"rssByProcMiB"`
	IdleRSSByProc map[string]float64 `json:"idleRSSByProcMiB"`
	CPUSec        float64            `json:"cpuSec"`
}

// crdWorkers is how many clients create the custom objects at once.
const crdWorkers = 16

// crdGroup is the benchmark CRDs' API group.
const crdGroup = "bench.example.com"

// crdSuite runs each side on its own data: the CRDs, then the objects
// spread evenly over them in the default namespace.
func (b *bench) crdSuite(ctx context.Context, plan crdPlan) error {
	if plan.crds <= 0 || plan.objects < 0 {
		return fmt.Errorf("crd: -crds %d must be positive and -crd-objects %d not negative", plan.crds, plan.objects)
	}
	for _, side := range []string{scaleBerth, scaleUpstream} {
		if !b.sides["all"] && !b.sides[strings.Fields(side)[0]] {
			continue
		}
		r, err := b.crdSide(ctx, side, plan)
		if err != nil {
			return fmt.Errorf("crd %s: %w", side, err)
		}
		fmt.Fprintf(os.Stderr, "crd %-12s crds=%d objects=%d: served in %.1f s, created %.0f/s (p50 %.1f ms, p99 %.1f ms), LIST %.1f ms, RSS %.0f → %.0f MiB\n",
			side, r.CRDs, r.Objects, r.ServedSec, r.CreatedPerSec, r.CreateP50Ms, r.CreateP99Ms, r.ListP50Ms, r.IdleRSSMiB, r.RSSMiB)
		b.res.CRD = append(b.res.CRD, r)
	}
	return nil
}

func (b *bench) crdSide(ctx context.Context, side string, plan crdPlan) (crdRound, error) {
	r := crdRound{Side: side, CRDs: plan.crds, Objects: plan.objects}
	c, stop, err := b.startControlPlane(ctx, "crd", side)
	if err != nil {
		return r, err
	}
	defer stop()
	r.IdleRSSByProc = c.usageByProcess()
	r.IdleRSSMiB = sum(r.IdleRSSByProc)
	cpuBefore := usageOf(c.pids()...).CPU
	crds := apiextensionsclient.NewForConfigOrDie(c.config).ApiextensionsV1().CustomResourceDefinitions()
	dyn := dynamic.NewForConfigOrDie(c.config)
	start := time.Now()
	for i := range plan.crds {
		if _, err := crds.Create(ctx, benchCRD(i), metav1.CreateOptions{}); err != nil {
			return r, err
		}
	}
	if err := waitFor(2*time.Minute, 200*time.Millisecond, "every CRD served", func() (bool, error) {
		for i := range plan.crds {
			if _, err := dyn.Resource(benchGVR(i)).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return false, c.alive()
			}
		}
		return true, nil
	}); err != nil {
		return r, err
	}
	r.ServedSec = time.Since(start).Seconds()
	lat, took, err := createObjects(ctx, dyn, plan)
	if err != nil {
		return r, err
	}
	r.CreatedPerSec = float64(plan.objects) / took.Seconds()
	r.CreateP50Ms, r.CreateP99Ms = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	var lists []time.Duration
	for i := range 10 {
		t0 := time.Now()
		if _, err := dyn.Resource(benchGVR(i%plan.crds)).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
			return r, err
		}
		lists = append(lists, time.Since(t0))
	}
	r.ListP50Ms = ms(percentile(lists, 50))
	r.CPUSec = (usageOf(c.pids()...).CPU - cpuBefore).Seconds()
	r.RSSByProc = c.usageByProcess()
	r.RSSMiB = sum(r.RSSByProc)
	return r, nil
}

// createObjects creates plan.objects custom objects over the CRDs with
// crdWorkers clients, returning each create's latency and the total time.
func createObjects(ctx context.Context, dyn dynamic.Interface, plan crdPlan) ([]time.Duration, time.Duration, error) {
	jobs := make(chan int)
	lat := make([]time.Duration, plan.objects)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for range crdWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range jobs {
				i := n % plan.crds
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": crdGroup + "/v1", "kind": fmt.Sprintf("Thing%d", i),
					"metadata": map[string]any{"name": fmt.Sprintf("t%d", n), "labels": map[string]any{"app": "bench"}},
					"spec":     map[string]any{"size": "medium", "replicas": int64(n % 7), "labels": map[string]any{"tier": "backend"}}}}
				t0 := time.Now()
				_, err := dyn.Resource(benchGVR(i)).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
				lat[n] = time.Since(t0)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for n := range plan.objects {
		jobs <- n
	}
	close(jobs)
	wg.Wait()
	return lat, time.Since(start), first
}

// benchGVR is the resource of the i-th benchmark CRD.
func benchGVR(i int) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crdGroup, Version: "v1", Resource: fmt.Sprintf("things%d", i)}
}

// benchCRD is the i-th benchmark CRD: namespaced, one version with a
// structural schema and the status subresource.
func benchCRD(i int) *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: benchGVR(i).Resource + "." + crdGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: crdGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: benchGVR(i).Resource, Singular: fmt.Sprintf("thing%d", i), Kind: fmt.Sprintf("Thing%d", i)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"size": str, "replicas": {Type: "integer", Minimum: ptr.To(0.0)},
						"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
					}}}}}}},
		},
	}
}

func sum(byProc map[string]float64) float64 {
	var t float64
	for _, v := range byProc {
		t += v
	}
	return t
}

func (b *bench) crdRoundOf(side string) *crdRound {
	for i := range b.res.CRD {
		if b.res.CRD[i].Side == side {
			return &b.res.CRD[i]
		}
	}
	return nil
}

func (b *bench) crdMarkdown() string {
	if len(b.res.CRD) == 0 {
		return ""
	}
	var s strings.Builder
	first := b.res.CRD[0]
	fmt.Fprintf(&s, "\n### Custom resources: %d CRDs, %d custom objects\n\n", first.CRDs, first.Objects)
	fmt.Fprintf(&s, "berth server (embedded etcd, controllers, scheduler: one process) vs etcd + kube-apiserver + kube-controller-manager + kube-scheduler, each started fresh; the CRDs (structural schema, status subresource) created, then the objects (spread evenly, default namespace) by %d client-go clients. Served: from the first CRD create until every resource answers a LIST. LIST: one CRD's objects. RSS idle (before the CRDs) and after the objects; CPU from the first CRD to the end.\n\n", crdWorkers)
	s.WriteString("| side | CRDs served | objects created/s | create p50 / p99 | LIST p50 | RSS idle | RSS after | CPU |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range b.res.CRD {
		fmt.Fprintf(&s, "| %s | %.1f s | %.0f | %.1f / %.1f ms | %.1f ms | %.0f MiB | %.0f MiB | %.1f s |\n",
			r.Side, r.ServedSec, r.CreatedPerSec, r.CreateP50Ms, r.CreateP99Ms, r.ListP50Ms, r.IdleRSSMiB, r.RSSMiB, r.CPUSec)
	}
	if up := b.crdRoundOf(scaleUpstream); up != nil {
		s.WriteString("\nUpstream's RSS by process, idle → after (MiB): ")
		var parts []string
		for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			parts = append(parts, fmt.Sprintf("%s %.0f → %.0f", name, up.IdleRSSByProc[name], up.RSSByProc[name]))
		}
		s.WriteString(strings.Join(parts, ", ") + ".\n")
		if bs := b.crdRoundOf(scaleBerth); bs != nil {
			api, etcd := up.RSSByProc["kube-apiserver"], up.RSSByProc["etcd"]
			s.WriteString("\n| berth server RSS after ÷ | ratio |\n|---|---|\n")
			fmt.Fprintf(&s, "| kube-apiserver alone | %.2f× |\n| kube-apiserver + etcd | %.2f× |\n| all four processes | %.2f× |\n| growth (after − idle) ÷ kube-apiserver + etcd growth | %.2f× |\n",
				ratio(bs.RSSMiB, api), ratio(bs.RSSMiB, api+etcd), ratio(bs.RSSMiB, up.RSSMiB),
				ratio(bs.RSSMiB-bs.IdleRSSMiB, api+etcd-up.IdleRSSByProc["kube-apiserver"]-up.IdleRSSByProc["etcd"]))
		}
	}
	return s.String()
}
