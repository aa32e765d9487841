package apiserver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// latencies summarises one operation at one concurrency.
type latencies struct {
	op          string
	concurrency int
	samples     []time.Duration
	wall        time.Duration
}

func (l latencies) pct(p float64) time.Duration {
	s := slices.Clone(l.samples)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func (l latencies) row() string {
	return fmt.Sprintf("%-10s %6d %7d %10.2f %10.2f %10.0f", l.op, l.concurrency, len(l.samples),
		float64(l.pct(0.50).Microseconds())/1000, float64(l.pct(0.99).Microseconds())/1000,
		float64(len(l.samples))/l.wall.Seconds())
}

// runConcurrent runs n calls of op with c workers, timing each.
func runConcurrent(b *testing.B, name string, c, n int, op func(i int) error) latencies {
	b.Helper()
	res := latencies{op: name, concurrency: c, samples: make([]time.Duration, n)}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				res.samples[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatalf("%s at concurrency %d: %v", name, c, err)
	}
	return res
}

// newClient is a client with its own connection (as separate agents have).
func newClient(b *testing.B) *kubernetes.Clientset {
	b.Helper()
	cfg := shared.RESTConfig(b)
	cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext // own transport, not the shared one
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

func benchNamespace(b *testing.B, cs *kubernetes.Clientset, prefix string) string {
	b.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// BenchmarkAPIServer measures create, get, list and watch-delivery latency
// (p50, p99) and throughput against `berth server` with embedded etcd at
// several concurrency levels, and prints them as a table.
func BenchmarkAPIServer(b *testing.B) {
	ctx := context.Background()
	const perLevel = 300
	for range b.N {
		var rows []latencies
		for _, c := range []int{1, 8, 32} {
			cs := newClient(b)
			ns := benchNamespace(b, cs, fmt.Sprintf("bench-c%d-", c))
			pods := cs.CoreV1().Pods(ns)

			// Watch delivery: time from the start of a create to its ADDED event.
			w, err := pods.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			var startMu sync.Mutex
			started := make(map[string]time.Time, perLevel)
			delivered := make([]time.Duration, 0, perLevel)
			watchDone := make(chan struct{})
			go func() {
				defer close(watchDone)
				for ev := range w.ResultChan() {
					if ev.Type != watch.Added {
						continue
					}
					startMu.Lock()
					t0 := started[ev.Object.(*corev1.Pod).Name]
					startMu.Unlock()
					delivered = append(delivered, time.Since(t0))
					if len(delivered) == perLevel {
						return
					}
				}
			}()
			create := runConcurrent(b, "create", c, perLevel, func(i int) error {
				p := testPod(fmt.Sprintf("p%d", i))
				startMu.Lock()
				started[p.Name] = time.Now()
				startMu.Unlock()
				_, err := pods.Create(ctx, p, metav1.CreateOptions{})
				return err
			})
			select {
			case <-watchDone:
			case <-time.After(60 * time.Second):
				b.Fatalf("watch delivered %d of %d events", len(delivered), perLevel)
			}
			w.Stop()
			get := runConcurrent(b, "get", c, perLevel, func(int) error {
				_, err := pods.Get(ctx, fmt.Sprintf("p%d", rand.IntN(perLevel)), metav1.GetOptions{})
				return err
			})
			list := runConcurrent(b, "list", c, perLevel/10, func(int) error {
				l, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
				if err == nil && len(l.Items) != perLevel {
					err = fmt.Errorf("listed %d pods, want %d", len(l.Items), perLevel)
				}
				return err
			})
			rows = append(rows, create, get, list, latencies{op: "watch", concurrency: c, samples: delivered, wall: create.wall})
		}
		fmt.Fprintf(os.Stdout, "\nberth server, embedded etcd (%d pods per level; list = %d pods from the watch cache)\n", perLevel, perLevel)
		fmt.Fprintf(os.Stdout, "%-10s %6s %7s %10s %10s %10s\n", "op", "conc", "ops", "p50(ms)", "p99(ms)", "ops/s")
		for _, r := range rows {
			fmt.Fprintln(os.Stdout, r.row())
			b.ReportMetric(float64(r.pct(0.5).Microseconds())/1000, fmt.Sprintf("%s-c%d-p50-ms", r.op, r.concurrency))
		}
	}
}

// BenchmarkWatchFanOut: 1000 watchers of pods by spec.nodeName (as 1000
// agents), over 20 connections; 1000 pods, one per node. Each watcher must
// get exactly its own pod; reports delivery latency and total time.
func BenchmarkWatchFanOut(b *testing.B) {
	ctx := context.Background()
	const nodes, conns = 1000, 20
	for range b.N {
		clients := make([]*kubernetes.Clientset, conns)
		for i := range clients {
			clients[i] = newClient(b)
		}
		ns := benchNamespace(b, clients[0], "bench-fanout-")
		var startMu sync.Mutex
		started := map[string]time.Time{}
		got := make([]chan string, nodes)
		lat := make(chan time.Duration, nodes)
		var watchers []watch.Interface
		for i := range nodes {
			node := fmt.Sprintf("node-%d", i)
			w, err := clients[i%conns].CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
			if err != nil {
				b.Fatalf("watcher %d: %v", i, err)
			}
			watchers = append(watchers, w)
			got[i] = make(chan string, 2)
			go func() {
				for ev := range w.ResultChan() {
					if ev.Type == watch.Added {
						p := ev.Object.(*corev1.Pod)
						startMu.Lock()
						t0 := started[p.Name]
						startMu.Unlock()
						lat <- time.Since(t0)
						got[i] <- p.Spec.NodeName
					}
				}
			}()
		}
		start := time.Now()
		creates := runConcurrent(b, "create", 16, nodes, func(i int) error {
			p := testPod(fmt.Sprintf("fan-%d", i))
			p.Spec.NodeName = fmt.Sprintf("node-%d", i)
			startMu.Lock()
			started[p.Name] = time.Now()
			startMu.Unlock()
			_, err := clients[i%conns].CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
		res := latencies{op: "delivery", concurrency: nodes, wall: 0}
		for i := range nodes {
			select {
			case n := <-got[i]:
				if n != fmt.Sprintf("node-%d", i) {
					b.Fatalf("watcher of node-%d got a pod of %s", i, n)
				}
			case <-time.After(60 * time.Second):
				b.Fatalf("watcher of node-%d got nothing", i)
			}
			res.samples = append(res.samples, <-lat)
		}
		res.wall = time.Since(start)
		for _, w := range watchers {
			w.Stop()
		}
		fmt.Fprintf(os.Stdout, "\nwatch fan-out: %d watchers by spec.nodeName over %d connections, %d pods (one per node)\n", nodes, conns, nodes)
		fmt.Fprintf(os.Stdout, "%-10s %6s %7s %10s %10s %10s\n", "op", "conc", "ops", "p50(ms)", "p99(ms)", "ops/s")
		fmt.Fprintln(os.Stdout, creates.row())
		fmt.Fprintln(os.Stdout, res.row())
		fmt.Fprintf(os.Stdout, "all %d pods created and delivered in %s\n", nodes, res.wall.Round(time.Millisecond))
		b.ReportMetric(float64(res.pct(0.5).Microseconds())/1000, "delivery-p50-ms")
		b.ReportMetric(float64(res.pct(0.99).Microseconds())/1000, "delivery-p99-ms")
	}
}

// BenchmarkServiceCreate: creating Services (one compare-and-swap on the
// IP bitmap each, a second on the node port bitmap for NodePorts) and
// ConfigMaps (no allocation) for comparison, at 1 and 8 clients.
func BenchmarkServiceCreate(b *testing.B) {
	ctx := context.Background()
	const n = 200
	for range b.N {
		var rows []latencies
		for _, c := range []int{1, 8} {
			cs := newClient(b)
			ns := benchNamespace(b, cs, fmt.Sprintf("bench-svc-c%d-", c))
			rows = append(rows, runConcurrent(b, "configmap", c, n, func(i int) error {
				_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
				return err
			}))
			for _, typ := range []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort} {
				rows = append(rows, runConcurrent(b, strings.ToLower(string(typ)), c, n, func(i int) error {
					_, err := cs.CoreV1().Services(ns).Create(ctx, newService(fmt.Sprintf("%s-%d", strings.ToLower(string(typ)), i), typ), metav1.CreateOptions{})
					return err
				}))
			}
		}
		b.Logf("\n%-10s %6s %7s %10s %10s %10s", "op", "conc", "n", "p50 ms", "p99 ms", "per s")
		for _, r := range rows {
			b.Logf("%s", r.row())
		}
	}
}
