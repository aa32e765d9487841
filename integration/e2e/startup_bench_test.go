package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
)

// BenchmarkPodStartupSLO measures pod startup latency as the Kubernetes
// pod startup SLI defines it — from the pod's creation to all its
// containers reported started, observed through a watch, with the image
// already present — for 30 and 100 pods created at once on one node
// (`berth server` and one `berth agent` as processes on the package's
// containerd). Per pod it takes two figures: from the pod's
// creationTimestamp (the SLI as written; the API keeps whole seconds, so it
// reads up to 1 s long) and from the start of the client's create request
// (to the millisecond). It reports their p50 and p99, the wall time until
// the last pod ran, and the agent's and the server's RSS (VmRSS with the
// pods running) and CPU time (utime+stime, /proc/PID/stat) over the run.
// Each iteration deletes its pods (gracefully) and waits until they are
// gone.
func BenchmarkPodStartupSLO(b *testing.B) {
	harness.DropPageCache(b, harness.Binary(b))
	c := harness.StartCluster(b, harness.ClusterOptions{})
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 1000, 1000 // the creates go out at once
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	harness.WaitFor(b, 90*time.Second, "node Ready", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(context.Background(), c.Node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				return cond.Status == v1.ConditionTrue, cond.Message
			}
		}
		return false, "no Ready condition"
	})
	// A first pod makes the image present and warms the node.
	run := &startupRun{b: b, c: c, client: client, image: c.Env.BusyboxImage}
	run.once("warmup", 1)
	var rows []string
	for _, n := range []int{30, 100} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			run.b = b
			var res startupResult
			for i := 0; i < b.N; i++ {
				r := run.once(fmt.Sprintf("p%d-%d", n, i), n)
				res.merge(r)
			}
			res.report(b)
			rows = append(rows, res.row(n))
		})
	}
	fmt.Fprintf(os.Stdout, "\npod startup on one node (%d CPUs), images present, all pods created at once:\n"+
		"| pods | p50 create→running | p99 create→running | p50 SLI (creationTimestamp) | p99 SLI | last pod running | agent RSS | server RSS | agent CPU | server CPU |\n"+
		"|---|---|---|---|---|---|---|---|---|---|\n%s\n\n", runtime.NumCPU(), strings.Join(rows, "\n"))
}

// startupRun creates batches of pods on one cluster.
type startupRun struct {
	b      *testing.B
	c      *harness.Cluster
	client kubernetes.Interface
	image  string
}

// startupResult are the figures of one or more batches.
type startupResult struct {
	fromRequest, fromCreation []time.Duration
	lastRunning               time.Duration
	agentRSS, serverRSS       int64 // bytes, the largest seen
	agentCPU, serverCPU       time.Duration
}

func (r *startupResult) merge(o startupResult) {
	r.fromRequest = append(r.fromRequest, o.fromRequest...)
	r.fromCreation = append(r.fromCreation, o.fromCreation...)
	r.lastRunning = max(r.lastRunning, o.lastRunning)
	r.agentRSS, r.serverRSS = max(r.agentRSS, o.agentRSS), max(r.serverRSS, o.serverRSS)
	r.agentCPU += o.agentCPU
	r.serverCPU += o.serverCPU
}

func (r *startupResult) report(b *testing.B) {
	b.ReportMetric(percentile(r.fromRequest, 50).Seconds(), "p50-s")
	b.ReportMetric(percentile(r.fromRequest, 99).Seconds(), "p99-s")
	b.ReportMetric(percentile(r.fromCreation, 50).Seconds(), "sli-p50-s")
	b.ReportMetric(percentile(r.fromCreation, 99).Seconds(), "sli-p99-s")
	b.ReportMetric(float64(r.agentRSS)/(1<<20), "agent-RSS-MiB")
	b.ReportMetric(float64(r.serverRSS)/(1<<20), "server-RSS-MiB")
	b.ReportMetric(r.agentCPU.Seconds()/float64(b.N), "agent-CPU-s")
	b.ReportMetric(r.serverCPU.Seconds()/float64(b.N), "server-CPU-s")
	b.ReportMetric(0, "ns/op") // the per-op wall time means nothing here
}

func (r *startupResult) row(n int) string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" }
	return fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %.0f MiB | %.0f MiB | %.2f s | %.2f s |", n,
		ms(percentile(r.fromRequest, 50)), ms(percentile(r.fromRequest, 99)),
		ms(percentile(r.fromCreation, 50)), ms(percentile(r.fromCreation, 99)), ms(r.lastRunning),
		float64(r.agentRSS)/(1<<20), float64(r.serverRSS)/(1<<20), r.agentCPU.Seconds(), r.serverCPU.Seconds())
}

// once creates n pods at once (label batch=name), waits until the watch
// shows every one with all containers running, measures, then deletes them
// and waits until they are gone.
func (r *startupRun) once(name string, n int) startupResult {
	b, client := r.b, r.client
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	selector := "batch=" + name
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	agentCPU0, serverCPU0 := harness.CPUTime(b, r.c.Agent.Pid()), harness.CPUTime(b, r.c.Server.Pid())
	requested := make([]time.Time, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			requested[i] = time.Now()
			if _, err := client.CoreV1().Pods("default").Create(ctx, r.pod(name, i), metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("create: %v", err)
	}

	var res startupResult
	running := map[string]bool{}
	for len(running) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("the watch ended with %d of %d pods running", len(running), n)
			}
			now := time.Now()
			pod, isPod := ev.Object.(*v1.Pod)
			if !isPod || ev.Type == watch.Deleted || running[pod.Name] || !allStarted(pod) {
				continue
			}
			running[pod.Name] = true
			i, err := strconv.Atoi(pod.Labels["index"])
			if err != nil {
				b.Fatalf("pod %s: index label: %v", pod.Name, err)
			}
			res.fromRequest = append(res.fromRequest, now.Sub(requested[i]))
			res.fromCreation = append(res.fromCreation, now.Sub(pod.CreationTimestamp.Time))
			res.lastRunning = now.Sub(start)
		case <-ctx.Done():
			b.Fatalf("%d of %d pods running after 10 minutes", len(running), n)
		}
	}
	res.agentCPU = harness.CPUTime(b, r.c.Agent.Pid()) - agentCPU0
	res.serverCPU = harness.CPUTime(b, r.c.Server.Pid()) - serverCPU0
	res.agentRSS, res.serverRSS = harness.RSS(b, r.c.Agent.Pid()), harness.RSS(b, r.c.Server.Pid())

	// Graceful deletion: a pod is gone from the API once the agent has
	// stopped it and torn everything down (its volumes' mounts too).
	if err := client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: selector}); err != nil {
		b.Fatal(err)
	}
	harness.WaitFor(b, 5*time.Minute, "batch "+name+" gone", func() (bool, string) {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items))
	})
	return res
}

func (r *startupRun) pod(batch string, i int) *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", batch, i), Labels: map[string]string{"batch": batch, "index": strconv.Itoa(i)}},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: r.image, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sleep", "3600"}}},
		},
	}
}

// allStarted reports a pod whose every container is running (the SLI's
// "all containers reported as started").
func allStarted(pod *v1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// percentile is the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100 // ceil(p/100·n)
	return s[max(rank, 1)-1]
}
