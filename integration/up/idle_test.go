package up

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/integration/harness"
)

// Sizes of the mixed workload and of the idle measurement: small in make
// test, the size (50 namespaces, a minute idle) under make soak
// (BERTH_SOAK=1).
var (
	workloadNamespaces = soakSize(10, 50)
	idleWindow         = time.Duration(soakSize(20, 60)) * time.Second
)

const (
	workloadInFlight = 5
	// idleGoal is the bound for an idle berth up (a reported
	// figure: CPU under a shared machine's load is not asserted).
	idleGoal = 0.02
)

// soakSize is small, or big when BERTH_SOAK=1.
func soakSize(small, big int) int {
	if os.Getenv("BERTH_SOAK") == "1" {
		return big
	}
	return small
}

// After a mixed workload — namespaces each with a ConfigMap, a Secret, a
// Deployment rolled out once, a Service, a Job and a custom resource, all
// deleted again with their namespace, and the CRD with them — every
// namespace, pod and custom resource is gone (from the apiserver and from
// containerd), and berth up idles: it logs the CPU berth up and its
// containerd used over a minute, idle after start (the baseline) and idle
// after the workload, with their ratio, against the goal of 2 % of a core.
func TestIdleAfterMixedWorkload(t *testing.T) {
	requirePrerequisites(t)
	bridge, cidr := harness.ClaimSubnet(t, 237, "bidle")
	opts := upOptions{Listen: "127.0.0.1:" + strconv.Itoa(harness.FreePort(t)), Bridge: bridge, PodCIDR: cidr,
		ServiceCIDR: strings.Replace(cidr, "10.237.", "10.238.", 1), HTTPPort: harness.FreePort(t), HTTPSPort: harness.FreePort(t)}
	dataDir := shortTempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	up := startUp(t, ctx, dataDir, opts)
	poll(t, ctx, up.exited, "berth up to be ready", func() bool { return strings.Contains(up.stdout.String(), "use: kubectl --kubeconfig") })
	cfg, err := clientcmd.BuildConfigFromFlags("", up.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	client := kubernetes.NewForConfigOrDie(cfg)
	waitReadyNode(t, ctx, up.exited, client)

	before := idleCPU(t, up, dataDir)
	started := time.Now()
	runWorkload(t, ctx, client, apiextensionsclient.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg))
	if t.Failed() {
		return
	}
	t.Logf("workload of %d namespaces created, run and deleted in %s", workloadNamespaces, time.Since(started).Round(time.Second))
	crictl, err := cri.New(ctx, cri.Config{Endpoint: "unix://" + dataDir + "/containerd/containerd.sock"})
	if err != nil {
		t.Fatal(err)
	}
	defer crictl.Close()
	poll(t, ctx, up.exited, "the workload's pods gone from containerd", func() bool {
		return len(workloadSandboxes(t, ctx, crictl)) == 0
	})
	after := idleCPU(t, up, dataDir)

	t.Logf("CPU over %s idle (fraction of one core):", idleWindow)
	t.Logf("%-18s %12s %12s %8s", "process", "after start", "after load", "ratio")
	for _, name := range []string{"berth up", "containerd+shims"} {
		ratio := "-"
		if before[name] > 0 {
			ratio = fmt.Sprintf("%.2f", after[name]/before[name])
		}
		t.Logf("%-18s %11.2f%% %11.2f%% %8s", name, 100*before[name], 100*after[name], ratio)
	}
	verdict := "met"
	if after["berth up"] >= idleGoal {
		verdict = "NOT met"
	}
	t.Logf("goal: idle berth up under %.0f%% of a core after the workload: %s", 100*idleGoal, verdict)
}

// waitReadyNode waits for the cluster's one node to be Ready.
func waitReadyNode(t *testing.T, ctx context.Context, exited <-chan struct{}, c kubernetes.Interface) {
	t.Helper()
	poll(t, ctx, exited, "the node Ready", func() bool {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 1 {
			return false
		}
		for _, cond := range nodes.Items[0].Status.Conditions {
			if cond.Type == v1.NodeReady {
				return cond.Status == v1.ConditionTrue
			}
		}
		return false
	})
}

// workloadPrefix starts every namespace of the workload.
const workloadPrefix = "idle-wl-"

var widgets = schema.GroupVersionResource{Group: "idle.berth.test", Version: "v1", Resource: "widgets"}

// runWorkload creates, runs and deletes workloadNamespaces namespaces,
// workloadInFlight at a time, then the CRD, and waits until all of it is
// gone from the apiserver.
func runWorkload(t *testing.T, ctx context.Context, c kubernetes.Interface, ext apiextensionsclient.Interface, dyn dynamic.Interface) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgets.Resource + "." + widgets.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgets.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptrTo(true)}}}}}},
		},
	}
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the CRD established", func() (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})

	var wg sync.WaitGroup
	errs := make(chan error, workloadNamespaces)
	slots := make(chan struct{}, workloadInFlight)
	for i := range workloadNamespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			if err := namespaceWorkload(ctx, c, dyn, fmt.Sprintf("%s%02d", workloadPrefix, i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lastDeleted := time.Now()
	defer func() {
		t.Logf("the last namespace and the CRD gone %s after their deletion", time.Since(lastDeleted).Round(100*time.Millisecond))
	}()
	waitUntil(t, ctx, "every namespace of the workload and the CRD gone", func() (bool, error) {
		list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var left []string
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, workloadPrefix) {
				left = append(left, ns.Name+" "+string(ns.Status.Phase))
			}
		}
		_, err = crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err == nil {
			left = append(left, "the CRD")
		} else if !apierrors.IsNotFound(err) {
			return false, err
		}
		if len(left) > 0 {
			return false, fmt.Errorf("left: %v", left)
		}
		return true, nil
	})
}

// namespaceWorkload is one namespace's part: its objects created, the
// Deployment available and rolled out once, the Job complete, then the
// namespace deleted (not waited for).
func namespaceWorkload(ctx context.Context, c kubernetes.Interface, dyn dynamic.Interface, ns string) error {
	fail := func(what string, err error) error { return fmt.Errorf("namespace %s: %s: %w", ns, what, err) }
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fail("create", err)
	}
	if err := waitUntilErr(ctx, func() (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fail("default ServiceAccount", err)
	}
	labels := map[string]string{"app": "web"}
	grace, one := int64(1), int32(1)
	sleeper := v1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{Name: "main", Image: "docker.io/berth/busybox:1",
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}}}
	job := sleeper.DeepCopy()
	job.RestartPolicy = v1.RestartPolicyNever
	job.Containers[0].Command = []string{"sh", "-c", "echo done"}
	steps := []struct {
		what string
		do   func() error
	}{
		{"configmap", func() error {
			_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			return err
		}},
		{"secret", func() error {
			_, err := c.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			return err
		}},
		{"deployment", func() error {
			_, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
				Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: sleeper}}}, metav1.CreateOptions{})
			return err
		}},
		{"service", func() error {
			_, err := c.CoreV1().Services(ns).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{
				Selector: labels, Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
			return err
		}},
		{"job", func() error {
			_, err := c.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once"}, Spec: batchv1.JobSpec{
				Template: v1.PodTemplateSpec{Spec: *job}}}, metav1.CreateOptions{})
			return err
		}},
		{"custom resource", func() error {
			w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": widgets.Group + "/" + widgets.Version, "kind": "Widget",
				"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3)}}}
			_, err := dyn.Resource(widgets).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
			return err
		}},
		{"deployment available", func() error { return waitDeployment(ctx, c, ns, "web", 1) }},
		{"rollout", func() error {
			patch := `{"spec":{"template":{"metadata":{"annotations":{"rollout":"2"}}}}}`
			_, err := c.AppsV1().Deployments(ns).Patch(ctx, "web", "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{})
			if err != nil {
				return err
			}
			return waitDeployment(ctx, c, ns, "web", 2)
		}},
		{"job complete", func() error {
			return waitUntilErr(ctx, func() (bool, error) {
				j, err := c.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
				return err == nil && j.Status.Succeeded == 1, err
			})
		}},
		{"delete", func() error { return c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fail(s.what, err)
		}
	}
	return nil
}

// waitDeployment waits until the Deployment's generation gen is rolled out
// with its one replica available.
func waitDeployment(ctx context.Context, c kubernetes.Interface, ns, name string, gen int64) error {
	return waitUntilErr(ctx, func() (bool, error) {
		d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration >= gen && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1, nil
	})
}

// waitUntilErr polls cond every 200 ms until it holds, errs or ctx ends.
func waitUntilErr(ctx context.Context, cond func() (bool, error)) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitUntil is waitUntilErr reporting the last error as the reason when
// ctx ends; an error from cond is only remembered, not fatal.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := waitUntilErr(ctx, func() (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// workloadSandboxes lists the sandboxes containerd still has of the
// workload's namespaces.
func workloadSandboxes(t *testing.T, ctx context.Context, rt *cri.Client) []string {
	t.Helper()
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range sandboxes {
		if strings.HasPrefix(s.GetMetadata().GetNamespace(), workloadPrefix) {
			left = append(left, s.GetMetadata().GetNamespace()+"/"+s.GetMetadata().GetName())
		}
	}
	return left
}

// idleCPU measures, over idleWindow, the CPU (user and system, as a
// fraction of one core) of the berth up process and of its containerd
// with the shims (every other process naming the data dir).
func idleCPU(t *testing.T, up *upProcess, dataDir string) map[string]float64 {
	t.Helper()
	berthPid := up.cmd.Process.Pid
	groups := func() map[string][]int {
		g := map[string][]int{"berth up": {berthPid}}
		for _, pid := range processesMentioning(dataDir) {
			if pid != berthPid {
				g["containerd+shims"] = append(g["containerd+shims"], pid)
			}
		}
		return g
	}
	pids := groups()
	start := map[int]float64{}
	for _, ps := range pids {
		for _, pid := range ps {
			start[pid] = cpuSeconds(pid)
		}
	}
	begun := time.Now()
	select {
	case <-up.exited:
		t.Fatal("berth up exited while idle")
	case <-time.After(idleWindow): // the measurement itself
	}
	elapsed := time.Since(begun).Seconds()
	out := map[string]float64{}
	for name, ps := range pids {
		for _, pid := range ps {
			if end := cpuSeconds(pid); end >= start[pid] {
				out[name] += (end - start[pid]) / elapsed
			}
		}
	}
	return out
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on every
// Linux architecture Go supports but alpha and ia64).
const clockTicks = 100

// cpuSeconds is the user and system CPU time the process has used so far
// (every thread of it), 0 when it is gone.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields after it.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks
}

func ptrTo[T any](v T) *T { return &v }
