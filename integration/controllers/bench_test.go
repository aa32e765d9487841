package controllers

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkDeployment1000 measures, against the real server, the time from
// creating a Deployment of 1000 replicas to the 1000th pod existing (the
// deployment and replicaset controllers, expectations and slow-start
// batches, through the apiserver and etcd). It prints a table.
func BenchmarkDeployment1000(b *testing.B) {
	const replicas = 1000
	ctx := context.Background()
	var rows []time.Duration
	for b.Loop() {
		b.StopTimer()
		onAdd, seen, all := countPods(replicas)
		run := startBenchRun(b, onAdd)
		b.StartTimer()
		start := time.Now()
		if _, err := env.client.AppsV1().Deployments(run.ns).Create(ctx, newDeployment(run.ns, replicas, "img:v1"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitPods(b, all, seen, replicas)
		took := time.Since(start)
		b.StopTimer()
		run.end()
		rows = append(rows, took)
		b.StartTimer()
	}
	mean := meanOf(rows)
	b.ReportMetric(mean.Seconds(), "s/all-created")
	b.ReportMetric(float64(replicas)/mean.Seconds(), "pods/s")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nscenario\truns\tall pods created (mean)\tpods/s")
	fmt.Fprintf(tw, "Deployment %d replicas → pods\t%d\t%.2fs\t%.0f\n", replicas, len(rows), mean.Seconds(), float64(replicas)/mean.Seconds())
	tw.Flush()
}

// BenchmarkDaemonSet1000Nodes measures, against the real server, the time
// from creating a DaemonSet over 1000 (fake) nodes to its 1000th pod
// existing and to its status reporting all 1000 scheduled (the daemonset
// controller's plan over every node, its revision, slow-start batches,
// through the apiserver and etcd). The nodes have no agent, so the daemon
// set tolerates every taint (as node agents' daemon sets commonly do) and
// the node lifecycle controller's taints do not matter. It prints a table.
func BenchmarkDaemonSet1000Nodes(b *testing.B) {
	const nodes = 1000
	ctx := context.Background()
	label := fmt.Sprintf("bench-ds-%d", time.Now().UnixNano())
	for i := range nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", label, i), Labels: map[string]string{"berth-bench": label}}}
		if _, err := env.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	defer func() {
		_ = env.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "berth-bench=" + label})
	}()
	var created, scheduled []time.Duration
	for b.Loop() {
		b.StopTimer()
		onAdd, seen, all := countPods(nodes)
		run := startBenchRun(b, onAdd)
		ns := run.ns
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec: corev1.PodSpec{NodeSelector: map[string]string{"berth-bench": label},
						Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						Containers:  []corev1.Container{{Name: "c", Image: "img:v1"}}}},
			},
		}
		b.StartTimer()
		start := time.Now()
		if _, err := env.client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitPods(b, all, seen, nodes)
		created = append(created, time.Since(start))
		deadline := time.Now().Add(5 * time.Minute)
		for {
			cur, err := env.client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
			if err == nil && cur.Status.DesiredNumberScheduled == nodes && cur.Status.CurrentNumberScheduled == nodes {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("status not at %d scheduled after 5m: %+v", nodes, cur.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		scheduled = append(scheduled, time.Since(start))
		b.StopTimer()
		run.end()
		b.StartTimer()
	}
	mc, ms := meanOf(created), meanOf(scheduled)
	b.ReportMetric(mc.Seconds(), "s/all-created")
	b.ReportMetric(float64(nodes)/mc.Seconds(), "pods/s")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nscenario\truns\tall pods created (mean)\tstatus: all scheduled (mean)\tpods/s")
	fmt.Fprintf(tw, "DaemonSet over %d nodes\t%d\t%.2fs\t%.2fs\t%.0f\n", nodes, len(created), mc.Seconds(), ms.Seconds(), float64(nodes)/mc.Seconds())
	tw.Flush()
}

// BenchmarkJob1000 measures, against the real server, the time from
// creating a Job of 1000 completions (parallelism 100) to its Complete
// condition, each pod finishing as soon as it exists (played through the
// API, as an agent would report it): the job controller's creations,
// finalizer tracking and status writes through the apiserver and etcd. It
// prints a table.
func BenchmarkJob1000(b *testing.B) {
	const completions, parallelism = 1000, 100
	ctx := context.Background()
	var rows []time.Duration
	for b.Loop() {
		b.StopTimer()
		finish := make(chan *corev1.Pod, completions)
		run := startBenchRun(b, func(p *corev1.Pod) { finish <- p })
		ns, stop := run.ns, run.stop
		for range 8 { // the "agent": pods succeed at once
			go func() {
				for {
					select {
					case <-stop:
						return
					case p := <-finish:
						p = p.DeepCopy()
						now := metav1.Now()
						p.Status.Phase = corev1.PodSucceeded
						p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
							Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, StartedAt: now, FinishedAt: now}}}}
						_, _ = env.client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
					}
				}
			}()
		}
		b.StartTimer()
		start := time.Now()
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: batchv1.JobSpec{Completions: int32p(completions), Parallelism: int32p(parallelism),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "img"}}}}}}
		if _, err := env.client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Minute)
		for {
			got, err := env.client.BatchV1().Jobs(ns).Get(ctx, "bench", metav1.GetOptions{})
			if err == nil && jobCondition(got, batchv1.JobComplete) != nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("job not complete after 10m: %+v", got.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
		took := time.Since(start)
		b.StopTimer()
		run.end()
		rows = append(rows, took)
		b.StartTimer()
	}
	mean := meanOf(rows)
	b.ReportMetric(mean.Seconds(), "s/complete")
	b.ReportMetric(float64(completions)/mean.Seconds(), "completions/s")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nscenario\truns\ttime to Complete (mean)\tcompletions/s")
	fmt.Fprintf(tw, "Job %d completions, parallelism %d\t%d\t%.2fs\t%.0f\n", completions, parallelism, len(rows), mean.Seconds(), float64(completions)/mean.Seconds())
	tw.Flush()
}

// benchRun is one benchmark iteration's namespace and the informer on its
// pods.
type benchRun struct {
	ns      string
	factory informers.SharedInformerFactory
	stop    chan struct{}
}

// startBenchRun creates a namespace and starts an informer on its pods (an
// informer, not a bare watch: it re-establishes the watch if the server
// ends it under the burst of events) calling onAdd for each pod added.
func startBenchRun(b *testing.B, onAdd func(*corev1.Pod)) *benchRun {
	b.Helper()
	r := &benchRun{ns: "bench-" + fmt.Sprint(time.Now().UnixNano()), stop: make(chan struct{})}
	if _, err := env.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	r.factory = informers.NewSharedInformerFactoryWithOptions(env.client, 0, informers.WithNamespace(r.ns))
	if _, err := r.factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		onAdd(obj.(*corev1.Pod))
	}}); err != nil {
		b.Fatal(err)
	}
	r.factory.Start(r.stop)
	r.factory.WaitForCacheSync(r.stop)
	return r
}

// end stops the informer and deletes the namespace.
func (r *benchRun) end() {
	close(r.stop)
	r.factory.Shutdown()
	_ = env.client.CoreV1().Namespaces().Delete(context.Background(), r.ns, metav1.DeleteOptions{})
}

// countPods is an onAdd counting pods in seen and closing all at the n-th.
func countPods(n int64) (onAdd func(*corev1.Pod), seen *atomic.Int64, all chan struct{}) {
	seen, all = &atomic.Int64{}, make(chan struct{})
	return func(*corev1.Pod) {
		if seen.Add(1) == n {
			close(all)
		}
	}, seen, all
}

// waitPods waits for countPods' all, failing the benchmark after 5 minutes.
func waitPods(b *testing.B, all chan struct{}, seen *atomic.Int64, n int64) {
	b.Helper()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d pods after 5m", seen.Load(), n)
	}
}

func meanOf(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
