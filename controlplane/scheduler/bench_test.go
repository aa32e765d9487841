package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

// benchCase is a throughput scenario.
type benchCase struct {
	name  string
	nodes int
	pods  int
	// pod builds the i-th pending pod.
	pod func(i int) *v1.Pod
}

func plainPod(i int) *v1.Pod {
	return st.Pod(fmt.Sprintf("p%05d", i), st.Req("cpu", "100m", "memory", "128Mi"), st.PodLabels("app", fmt.Sprintf("app%d", i%50)))
}

func spreadPod(i int) *v1.Pod {
	return st.Pod(fmt.Sprintf("p%05d", i), st.Req("cpu", "100m", "memory", "128Mi"), st.PodLabels("app", fmt.Sprintf("app%d", i%50)),
		st.Spread("zone", 1, v1.DoNotSchedule, fmt.Sprintf("app%d", i%50)),
		st.Spread(v1.LabelHostname, 1, v1.ScheduleAnyway, fmt.Sprintf("app%d", i%50)))
}

func antiAffinityPod(i int) *v1.Pod {
	return st.Pod(fmt.Sprintf("p%05d", i), st.Req("cpu", "100m", "memory", "128Mi"), st.PodLabels("app", fmt.Sprintf("app%d", i%50)),
		st.WithAffinity(&v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{
			Weight: 100, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: metaSelector("app", fmt.Sprintf("app%d", i%50))},
		}}}}))
}

// runCycles schedules every pod of bc through the queue, the cache's
// snapshot, the algorithm and the assume step (no API: the binding is
// taken as confirmed), returning the wall time.
func runCycles(b *testing.B, bc benchCase) time.Duration {
	b.Helper()
	clk := testingclock.NewFakeClock(time.Now())
	cache := NewCache()
	for i := range bc.nodes {
		cache.AddNode(st.Node(fmt.Sprintf("node-%05d", i), st.Labels("zone", fmt.Sprintf("zone-%d", i%10)),
			st.Allocatable("cpu", "32", "memory", "128Gi", "pods", "110")))
	}
	q := NewQueue(QueueConfig{Clock: clk})
	for i := range bc.pods {
		q.Add(bc.pod(i))
	}
	algo := &Algorithm{Profile: DefaultProfile(), Parallelism: DefaultParallelism, Rand: rand.New(rand.NewPCG(1, 2))}
	snap := fw.NewSnapshot(nil)
	ctx := context.Background()
	start := time.Now()
	for range bc.pods {
		qp := q.Pop()
		pi, err := fw.NewPodInfo(qp.Pod)
		if err != nil {
			b.Fatal(err)
		}
		cache.UpdateSnapshot(snap)
		res, err := algo.Schedule(ctx, pi, snap)
		if err != nil {
			b.Fatalf("pod %s: %v", qp.Pod.Name, err)
		}
		assumed := qp.Pod.DeepCopy()
		assumed.Spec.NodeName = res.SuggestedHost
		if err := cache.AssumePod(assumed); err != nil {
			b.Fatal(err)
		}
		q.Done(qp.Pod)
	}
	return time.Since(start)
}

// BenchmarkSchedulingThroughput measures pods scheduled per second by the
// scheduling cycle against in-memory snapshots and prints a table. Run:
//
//	go test -run '^$' -bench SchedulingThroughput -benchtime 1x ./controlplane/scheduler/
func BenchmarkSchedulingThroughput(b *testing.B) {
	cases := []benchCase{
		{"1000 nodes, 10000 pods", 1000, 10000, plainPod},
		{"5000 nodes, 10000 pods", 5000, 10000, plainPod},
		{"1000 nodes, 10000 pods, topology spread", 1000, 10000, spreadPod},
		{"1000 nodes, 10000 pods, preferred anti-affinity", 1000, 10000, antiAffinityPod},
	}
	type row struct {
		name       string
		nodes      int
		pods       int
		elapsed    time.Duration
		throughput float64
	}
	var rows []row
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				total += runCycles(b, bc)
			}
			per := total / time.Duration(b.N)
			tp := float64(bc.pods) / per.Seconds()
			b.ReportMetric(tp, "pods/s")
			b.ReportMetric(float64(per.Microseconds())/float64(bc.pods), "µs/pod")
			rows = append(rows, row{bc.name, bc.nodes, bc.pods, per, tp})
		})
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "scenario\tnodes\tpods\ttime\tpods/s\tµs/pod\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%d\t%d\t%.2fs\t%.0f\t%.0f\t\n", r.name, r.nodes, r.pods, r.elapsed.Seconds(), r.throughput, float64(r.elapsed.Microseconds())/float64(r.pods))
	}
	w.Flush()
}

func metaSelector(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}
