package scheduler

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var scheduledRE = regexp.MustCompile(`scheduler_schedule_attempts_total\{profile="default-scheduler",result="scheduled"\} (\d+)`)

// scheduledCount reads the scheduler's count of bound pods from /metrics
// (-1 while the endpoint is not up).
func (c *cluster) scheduledCount() int {
	resp, err := harness.HTTPGet("http://" + c.metricsAddr + "/metrics")
	if err != nil {
		return -1
	}
	m := scheduledRE.FindStringSubmatch(resp)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// parallel runs f(i) for i in [0, n) on 16 goroutines, failing b on the
// first error.
func parallel(b *testing.B, n int, f func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

// BenchmarkBindThroughput measures pods bound per second end to end: a
// `berth server` with N Node objects and 10 000 pending pods created
// before `berth scheduler` starts; the time runs from the scheduler's
// start to the last binding (its /metrics count). Prints a table. Run:
//
//	go test -run '^$' -bench BindThroughput -benchtime 1x -timeout 30m ./integration/scheduler/
func BenchmarkBindThroughput(b *testing.B) {
	type row struct {
		nodes, pods         int
		total, sched        time.Duration
		bindRate, totalRate float64
	}
	var rows []row
	for _, sc := range []struct{ nodes, pods int }{{1000, 10000}, {5000, 10000}} {
		b.Run(fmt.Sprintf("%d nodes, %d pods", sc.nodes, sc.pods), func(b *testing.B) {
			for range b.N {
				c := startServer(b)
				ctx := context.Background()
				parallel(b, sc.nodes, func(i int) error {
					n := node(fmt.Sprintf("node-%05d", i), "32", map[string]string{"zone": fmt.Sprintf("zone-%d", i%10)}, nil)
					_, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
					return err
				})
				parallel(b, sc.pods, func(i int) error {
					p := pod(fmt.Sprintf("p-%05d", i), "100m", func(p *corev1.Pod) { p.Labels["app"] = fmt.Sprintf("app%d", i%50) })
					_, err := c.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
					return err
				})
				start := time.Now()
				c.startScheduler(b)
				var first time.Time
				deadline := start.Add(20 * time.Minute)
				for {
					n := c.scheduledCount()
					if n > 0 && first.IsZero() {
						first = time.Now()
					}
					if n >= sc.pods {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d pods bound after 20 minutes", n, sc.pods)
					}
					time.Sleep(20 * time.Millisecond)
				}
				end := time.Now()
				unbound, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
				if err != nil {
					b.Fatal(err)
				}
				if len(unbound.Items) != 0 {
					b.Fatalf("%d pods unbound after the scheduler counted %d bindings", len(unbound.Items), sc.pods)
				}
				r := row{nodes: sc.nodes, pods: sc.pods, total: end.Sub(start), sched: end.Sub(first)}
				r.bindRate = float64(sc.pods) / r.sched.Seconds()
				r.totalRate = float64(sc.pods) / r.total.Seconds()
				b.ReportMetric(r.bindRate, "pods/s")
				rows = append(rows, r)
			}
		})
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "nodes\tpods\tfirst→last bind\tpods/s\tstart→last bind (incl. informer sync)\tpods/s\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%d\t%.2fs\t%.0f\t%.2fs\t%.0f\t\n", r.nodes, r.pods, r.sched.Seconds(), r.bindRate, r.total.Seconds(), r.totalRate)
	}
	w.Flush()
}
