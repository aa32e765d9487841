// Package stats drives resource usage end to end: `berth server` and
// `berth agent --server` as processes on a real containerd. A pod burning
// CPU shows a rising container_cpu_usage_seconds_total on the agent's
// /metrics/resource and non-zero CPU in `kubectl top pod`; a pod holding
// 64 MiB shows it in its working set and RSS; /stats/summary
// decodes into the kubelet's types with every pod of the node; and
// /metrics/cadvisor, fetched with the admin credentials, has series for
// every running container.
package stats

import (
	"testing"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { harness.Main(m, nodeenv.Options{SkipCNIConfig: true}) }
