package ingress

import (
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"berth/ingress/routes"
)

// BenchmarkProxy measures requests through the proxy to one local
// backend, from 8 kept-alive clients at once, against the same requests
// sent to the backend directly; it reports requests/s and p50/p99.
func BenchmarkProxy(b *testing.B) {
	w := newWorld()
	be := backend(b, "web")
	w.service(b, "web", be)
	w.ingress("site", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{prefixRule("web.example", map[string]string{"/": "web"})}})
	var cur atomic.Pointer[routes.Table]
	cur.Store(routes.Build(w.in))
	proxied := serve(b, &cur)
	for _, target := range []struct{ name, url string }{{"direct", be.URL}, {"proxied", proxied}} {
		b.Run(target.name, func(b *testing.B) { loadTest(b, target.url, "web.example", 8) })
	}
}

func loadTest(b *testing.B, url, host string, clients int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var (
		mu   sync.Mutex
		lats []time.Duration
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	began := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) {
				req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
				req.Host = host
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine = append(mine, time.Since(t0))
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
		b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "requests/s")
		b.ReportMetric(float64(lats[len(lats)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds()), "p99-µs")
	}
}
