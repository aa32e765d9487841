package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"berth/controlplane/controller/daemonset"
	"berth/controlplane/controller/job"
	"berth/controlplane/controller/manager"
)

// controllersPlan is the controller benchmark's sizes.
type controllersPlan struct {
	completions, parallelism, nodes int
}

// controllersRound is one workload's times on one side.
type controllersRound struct {
	Side     string `json:"side"`
	Workload string `json:"workload"`
	// PodsCreatedSec is from the workload's creation to its last pod
	// existing; DoneSec to the workload done (the Job's Complete
	// condition; the DaemonSet's status counting every pod available).
	PodsCreatedSec float64 `json:"podsCreatedSec"`
	DoneSec        float64 `json:"doneSec"`
	Pods           int     `json:"pods"`
}

const (
	ctrlBerth = "berth controllers"
	ctrlKCM   = "kube-controller-manager"
	// ctrlKCMUnthrottled is kube-controller-manager with client limits out
	// of the way (--kube-api-qps 1000 --kube-api-burst 1000): its
	// controllers' own pace.
	ctrlKCMUnthrottled = "kube-controller-manager, QPS 1000"
)

// controllersSuite runs the Job and the DaemonSet on a fresh `berth
// server` per side: once with its own controllers, once with its job and
// daemonset controllers off and kube-controller-manager v1.34 running
// those two against it — the same apiserver, etcd, scheduler and fake
// kubelet, so only the controllers differ. The fake nodes have Leases the
// driver renews; the driver plays their kubelet, moving each bound pod to
// Running and Ready, or, a Job's, to Succeeded.
func (b *bench) controllersSuite(ctx context.Context, plan controllersPlan) error {
	for _, side := range []string{ctrlBerth, ctrlKCM, ctrlKCMUnthrottled} {
		if err := b.controllersSide(ctx, side, plan); err != nil {
			return fmt.Errorf("controllers %s: %w", side, err)
		}
	}
	return nil
}

func (b *bench) controllersSide(ctx context.Context, side string, plan controllersPlan) error {
	dir := filepath.Join(b.work, "controllers-"+strings.NewReplacer(" ", "-", ",", "").Replace(side))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var serverArgs []string
	if side != ctrlBerth {
		own := slices.DeleteFunc(slices.Clone(manager.Controllers), func(n string) bool { return n == job.Name || n == daemonset.Name })
		serverArgs = []string{"--controllers", strings.Join(own, ",")}
	}
	c, err := b.startBerthServer(ctx, dir, serverArgs...)
	if err != nil {
		return err
	}
	defer c.stop()
	if side != ctrlBerth {
		if err := b.startKCM(c, dir, side == ctrlKCMUnthrottled); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodes := &fakeNodes{client: c.client}
	if err := nodes.grow(ctx, plan.nodes); err != nil {
		return err
	}
	go nodes.renew(ctx)
	kubelet := newFakeKubelet(c.client)
	go kubelet.run(ctx)

	r, err := b.jobRound(ctx, c, side, plan)
	if err != nil {
		return err
	}
	b.res.Controllers = append(b.res.Controllers, r)
	fmt.Fprintf(os.Stderr, "controllers %-24s %s: pods created %.2fs, complete %.2fs\n", side, r.Workload, r.PodsCreatedSec, r.DoneSec)
	if r, err = b.daemonSetRound(ctx, c, side, plan); err != nil {
		return err
	}
	b.res.Controllers = append(b.res.Controllers, r)
	fmt.Fprintf(os.Stderr, "controllers %-24s %s: pods created %.2fs, all available %.2fs\n", side, r.Workload, r.PodsCreatedSec, r.DoneSec)
	return nil
}

// startKCM runs kube-controller-manager with only the job and daemonset
// controllers against c, with its default client rate limits (what a
// cluster runs) or, unthrottled, none to speak of, and waits for its
// /healthz.
func (b *bench) startKCM(c *controlPlane, dir string, unthrottled bool) error {
	port := freePort()
	args := []string{"--kubeconfig", c.kubeconfig, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--cert-dir", filepath.Join(dir, "kcm"), "--leader-elect=false", "--controllers", "job,daemonset"}
	if unthrottled {
		args = append(args, "--kube-api-qps", "1000", "--kube-api-burst", "1000")
	}
	pr, err := startProc("kube-controller-manager", filepath.Join(b.logs, filepath.Base(dir)+"-kcm.log"), filepath.Join(b.upstreamBin, "kube-controller-manager"), args...)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, pr)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return waitFor(3*time.Minute, 500*time.Millisecond, url, func() (bool, error) {
		resp, err := insecure.Get(url)
		if err != nil {
			return false, c.alive()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, c.alive()
	})
}

// benchNamespace creates ns and waits for its default ServiceAccount.
func benchNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	return waitFor(time.Minute, 100*time.Millisecond, "namespace "+ns+"'s default ServiceAccount", func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// podCounter counts the pods ever created in a namespace and closes all
// once there were want.
type podCounter struct {
	seen atomic.Int64
	want int64
	all  chan struct{}
	stop chan struct{}
}

func countPods(client kubernetes.Interface, ns string, want int) (*podCounter, error) {
	pc := &podCounter{want: int64(want), all: make(chan struct{}), stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		if pc.seen.Add(1) == pc.want {
			close(pc.all)
		}
	}}); err != nil {
		return nil, err
	}
	factory.Start(pc.stop)
	factory.WaitForCacheSync(pc.stop)
	return pc, nil
}

// jobRound runs a Job of plan.completions at plan.parallelism to its
// Complete condition.
func (b *bench) jobRound(ctx context.Context, c *controlPlane, side string, plan controllersPlan) (controllersRound, error) {
	client := c.client
	r := controllersRound{Side: side, Workload: fmt.Sprintf("Job: %d completions, parallelism %d", plan.completions, plan.parallelism), Pods: plan.completions}
	const ns = "bench-job"
	if err := benchNamespace(ctx, client, ns); err != nil {
		return r, err
	}
	pc, err := countPods(client, ns, plan.completions)
	if err != nil {
		return r, err
	}
	defer close(pc.stop)
	completions, parallelism := int32(plan.completions), int32(plan.parallelism)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns}, Spec: batchv1.JobSpec{Completions: &completions, Parallelism: &parallelism,
		Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "c", Image: "img"}}}}}}
	start := time.Now()
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	err = pc.waitDone(ctx, &r, start, "the Job's Complete condition", func() (bool, error) {
		got, err := client.BatchV1().Jobs(ns).Get(ctx, "bench", metav1.GetOptions{})
		if err != nil {
			return false, c.alive()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == v1.ConditionTrue {
				return false, fmt.Errorf("the Job failed: %s", c.Message)
			}
			if c.Type == batchv1.JobComplete && c.Status == v1.ConditionTrue {
				return true, nil
			}
		}
		return false, c.alive()
	})
	return r, err
}

// daemonSetRound runs a DaemonSet over every fake node until its status
// counts every pod available.
func (b *bench) daemonSetRound(ctx context.Context, c *controlPlane, side string, plan controllersPlan) (controllersRound, error) {
	client := c.client
	r := controllersRound{Side: side, Workload: fmt.Sprintf("DaemonSet over %d nodes", plan.nodes), Pods: plan.nodes}
	const ns = "bench-ds"
	if err := benchNamespace(ctx, client, ns); err != nil {
		return r, err
	}
	pc, err := countPods(client, ns, plan.nodes)
	if err != nil {
		return r, err
	}
	defer close(pc.stop)
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.PodSpec{
			Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}},
			Containers:  []v1.Container{{Name: "c", Image: "img"}}}}}}
	start := time.Now()
	if _, err := client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	want := int32(plan.nodes)
	err = pc.waitDone(ctx, &r, start, "the DaemonSet's pods all available", func() (bool, error) {
		got, err := client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, c.alive()
		}
		st := got.Status
		return st.ObservedGeneration == got.Generation && st.DesiredNumberScheduled == want && st.UpdatedNumberScheduled == want && st.NumberAvailable == want, c.alive()
	})
	return r, err
}

// waitDone polls done until it holds, recording in r when every pod had been
// created (the counter's all) and when the workload was done, both from start.
func (pc *podCounter) waitDone(ctx context.Context, r *controllersRound, start time.Time, what string, done func() (bool, error)) error {
	created := time.Duration(0)
	err := waitFor(30*time.Minute, 50*time.Millisecond, what, func() (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		select {
		case <-pc.all:
			if created == 0 {
				created = time.Since(start)
			}
		default:
		}
		return done()
	})
	r.DoneSec, r.PodsCreatedSec = time.Since(start).Seconds(), created.Seconds()
	if created == 0 { // the last creation and the end in one poll
		r.PodsCreatedSec = r.DoneSec
	}
	return err
}

// fakeKubelet plays the fake nodes' kubelets: each pod bound to a node and
// still Pending goes Running and Ready, or, under restartPolicy Never
// (a Job's), Succeeded — one status write per pod, as a kubelet's — and a
// Running pod marked not Ready is reported Ready again.
type fakeKubelet struct {
	client kubernetes.Interface
	queue  workqueue.TypedInterface[*v1.Pod]
}

func newFakeKubelet(client kubernetes.Interface) *fakeKubelet {
	return &fakeKubelet{client: client, queue: workqueue.NewTyped[*v1.Pod]()}
}

func (k *fakeKubelet) run(ctx context.Context) {
	factory := informers.NewSharedInformerFactoryWithOptions(k.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	}))
	handle := func(obj any) {
		if p, ok := obj.(*v1.Pod); ok && needsReport(p) {
			k.queue.Add(p)
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: handle, UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		fmt.Fprintln(os.Stderr, "fake kubelet:", err)
		return
	}
	factory.Start(ctx.Done())
	for range 16 {
		go k.worker(ctx)
	}
	<-ctx.Done()
	k.queue.ShutDown()
	factory.Shutdown()
}

func (k *fakeKubelet) worker(ctx context.Context) {
	for {
		p, quit := k.queue.Get()
		if quit {
			return
		}
		k.start(ctx, p)
		k.queue.Done(p)
	}
}

// needsReport reports whether p's status is not what its kubelet reports:
// still Pending, or Running but not Ready (the node lifecycle controller
// marks a node's pods not Ready when its Lease is late; a kubelet reports
// them again).
func needsReport(p *v1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	switch p.Status.Phase {
	case v1.PodPending:
		return true
	case v1.PodRunning:
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady {
				return c.Status != v1.ConditionTrue
			}
		}
		return true
	}
	return false
}

// start writes p's status as its kubelet would, retrying on a fresh copy
// while it still needs the report.
func (k *fakeKubelet) start(ctx context.Context, p *v1.Pod) {
	pods := k.client.CoreV1().Pods(p.Namespace)
	for range 10 {
		updated := p.DeepCopy()
		updated.Status = podStatusOnFakeNode(p, metav1.Now())
		_, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err == nil || ctx.Err() != nil {
			return
		}
		if p, err = pods.Get(ctx, p.Name, metav1.GetOptions{}); err != nil || !needsReport(p) {
			return
		}
	}
}

// podStatusOnFakeNode is the status a kubelet would report for p at once:
// Succeeded for restartPolicy Never, else Running and Ready.
func podStatusOnFakeNode(p *v1.Pod, now metav1.Time) v1.PodStatus {
	st := v1.PodStatus{StartTime: &now, HostIP: "10.0.0.1", PodIP: "10.1.0.1", QOSClass: v1.PodQOSBestEffort}
	cond := func(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	name := p.Spec.Containers[0].Name
	if p.Spec.RestartPolicy == v1.RestartPolicyNever {
		st.Phase = v1.PodSucceeded
		st.Conditions = []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionTrue), cond(v1.PodReady, v1.ConditionFalse)}
		st.ContainerStatuses = []v1.ContainerStatus{{Name: name, Image: p.Spec.Containers[0].Image, State: v1.ContainerState{
			Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}}}
		return st
	}
	st.Phase = v1.PodRunning
	st.Conditions = []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionTrue), cond(v1.PodInitialized, v1.ConditionTrue),
		cond(v1.ContainersReady, v1.ConditionTrue), cond(v1.PodReady, v1.ConditionTrue)}
	st.ContainerStatuses = []v1.ContainerStatus{{Name: name, Image: p.Spec.Containers[0].Image, Ready: true, Started: ptrTrue(),
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}}}
	return st
}

func ptrTrue() *bool { t := true; return &t }

func (b *bench) controllersMarkdown() string {
	if len(b.res.Controllers) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("\n### Controllers: berth's vs kube-controller-manager v1.34 on the same berth server\n\n")
	s.WriteString("One fresh `berth server` per side (embedded etcd, scheduler); upstream's sides run it with its job and daemonset controllers off and kube-controller-manager `--controllers job,daemonset` against it, with its default client limits (QPS 20, burst 30: what clusters run) and with them raised to 1000 (the controllers' own pace). Fake nodes with Leases; the driver plays their kubelet (a bound pod goes Running and Ready, a Job's Succeeded, at once). Times from the workload's creation to its last pod created and to done (the Job Complete; the DaemonSet's status counting every pod available); ratio: berth's done ÷ the side's (below 1: berth faster).\n\n")
	s.WriteString("| workload | side | pods created | done | berth ÷ side |\n|---|---|---|---|---|\n")
	for _, br := range b.res.Controllers {
		if br.Side != ctrlBerth {
			continue
		}
		for _, r := range b.res.Controllers {
			if r.Workload == br.Workload {
				fmt.Fprintf(&s, "| %s | %s | %.2f s | %.2f s | %.2f× |\n", r.Workload, r.Side, r.PodsCreatedSec, r.DoneSec, ratio(br.DoneSec, r.DoneSec))
			}
		}
	}
	return s.String()
}
