package stats

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
)

const sleepers = `apiVersion: apps/v1
kind: Deployment
metadata: {name: sleepers, namespace: default}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: sleepers}}
  template:
    metadata: {labels: {app: sleepers}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: sleep
        image: %[1]s
        imagePullPolicy: IfNotPresent
        command: ["sleep", "3600"]
`

// BenchmarkStatsCost runs an agent with 30 pods at three housekeeping
// intervals (1h: a single sample at start, the baseline) and reports its CPU (over a minute, as a share of one core),
// its RSS, and the latency of /metrics/cadvisor and /stats/summary (20
// requests each on one connection). The difference in CPU between the two
// intervals over the samples taken is the cost of one sample.
func BenchmarkStatsCost(b *testing.B) {
	const pods, window = 30, time.Minute
	for _, interval := range []time.Duration{10 * time.Second, time.Second, time.Hour} {
		b.Run(fmt.Sprintf("pods=%d/interval=%s", pods, interval), func(b *testing.B) {
			c := harness.StartCluster(b, harness.ClusterOptions{AgentArgs: []string{"--housekeeping-interval", interval.String()}})
			ctx := context.Background()
			c.MustKubectl(b, fmt.Sprintf(sleepers, c.Env.BusyboxImage, pods), "apply", "-f", "-")
			b.Cleanup(func() {
				c.MustKubectl(b, "", "delete", "deployment", "sleepers", "--wait=true", "--timeout=120s")
				harness.WaitFor(b, 2*time.Minute, "the sleepers gone", func() (bool, string) {
					list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
					return err == nil && len(list.Items) == 0, fmt.Sprint(len(list.Items))
				})
			})
			harness.WaitFor(b, 3*time.Minute, "the sleepers running", func() (bool, string) {
				list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=sleepers"})
				if err != nil {
					return false, err.Error()
				}
				n := 0
				for _, p := range list.Items {
					if p.Status.Phase == v1.PodRunning {
						n++
					}
				}
				return n == pods, fmt.Sprint(n)
			})
			time.Sleep(15 * time.Second) // settle: starts done, a sample with every pod
			pid := c.Agent.Pid()
			cpu0 := harness.CPUTime(b, pid)
			time.Sleep(window)
			cpu := harness.CPUTime(b, pid) - cpu0
			b.ReportMetric(100*cpu.Seconds()/window.Seconds(), "agent-cpu-%")
			b.ReportMetric(float64(harness.RSS(b, pid))/(1<<20), "agent-rss-MiB")
			get := latency(b, c.Config, c.KubeletPort)
			p50, p99, size := get("/metrics/cadvisor")
			b.ReportMetric(float64(p50.Microseconds())/1000, "cadvisor-p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, "cadvisor-max-ms")
			b.ReportMetric(float64(size)/1024, "cadvisor-KiB")
			p50, _, _ = get("/stats/summary")
			b.ReportMetric(float64(p50.Microseconds())/1000, "summary-p50-ms")
		})
	}
}

// latency fetches a path of the agent's API 20 times on one connection and
// returns the median, the slowest and the answer's size.
func latency(b *testing.B, cfg *rest.Config, port int) func(path string) (p50, max time.Duration, size int) {
	client, err := latencyClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return scrape(b, client, port)
}

// latencyClient is an HTTP client with cfg's credentials that does not
// verify the agent's serving certificate (as curl -k).
func latencyClient(cfg *rest.Config) (*http.Client, error) {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	tlsCfg.InsecureSkipVerify = true
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}, nil
}
