package clusterdns

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkServiceA measures A queries for Service names over UDP on
// loopback, from 8 clients at once among 1000 Services; it reports
// queries/s and the p50/p99 latency.
func BenchmarkServiceA(b *testing.B) {
	const services, clients = 1000, 8
	objs := []runtime.Object{namespace("bench")}
	for i := range services {
		ip := fmt.Sprintf("10.43.%d.%d", i/250, i%250+1)
		objs = append(objs, service("bench", fmt.Sprintf("svc-%d", i), func(s *v1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip} }))
	}
	addr := start(b, Config{}, objs...)
	var (
		mu   sync.Mutex
		lats []time.Duration
		next int
	)
	b.ResetTimer()
	began := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
			conn, err := c.Dial(addr.String())
			if err != nil {
				b.Error(err)
				return
			}
			defer conn.Close()
			var mine []time.Duration
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= b.N {
					break
				}
				m := new(dns.Msg)
				m.SetQuestion(fmt.Sprintf("svc-%d.bench.svc.cluster.local.", i%services), dns.TypeA)
				t0 := time.Now()
				r, _, err := c.ExchangeWithConn(m, conn)
				mine = append(mine, time.Since(t0))
				if err != nil || len(r.Answer) != 1 {
					b.Errorf("query %d: %v %v", i, r, err)
					return
				}
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	slices.Sort(lats)
	if len(lats) > 0 {
		b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "queries/s")
		b.ReportMetric(float64(lats[len(lats)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds()), "p99-µs")
	}
}
