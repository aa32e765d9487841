package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"berth/integration/harness"

	v1 "k8s.io/api/core/v1"
)

// The read-only port serves the agent's metrics, as the kubelet's does:
// with a probed pod running, kubelet_running_pods counts it and
// prober_probe_total counts its readiness probe's successes.
func TestReadOnlyPortServesMetrics(t *testing.T) {
	n := newNode(t)
	n.start()
	m := podManifest(n.env, "probed", "", "app="+sleeper)
	m += "    readinessProbe:\n      exec:\n        command: [\"true\"]\n      periodSeconds: 1\n"
	n.write("probed.yaml", m)
	p := n.waitPod("probed-n1", "Running and Ready", time.Minute, func(p *v1.Pod) bool {
		return running(p) && condition(p, v1.PodReady) == v1.ConditionTrue
	})
	eventually(t, 30*time.Second, "the pod and its probe in GET /metrics", func() (bool, string) {
		body, err := n.metrics()
		if err != nil {
			return false, err.Error()
		}
		var missing []string
		for _, want := range []string{
			"\nkubelet_running_pods 1\n",
			"\nkubelet_running_containers{container_state=\"running\"} 1\n",
			"\nkubelet_node_name{node=\"n1\"} 1\n",
		} {
			if !strings.Contains(body, want) {
				missing = append(missing, strings.TrimSpace(want))
			}
		}
		for _, series := range [][]string{
			{"kubelet_started_pods_total"},
			{"kubelet_started_containers_total", `container_type="container"`},
			{"kubelet_runtime_operations_total", `operation_type="run_podsandbox"`},
			{"kubelet_runtime_operations_total", `operation_type="start_container"`},
			{"kubelet_pod_start_duration_seconds_count"},
			{"kubelet_pleg_relist_duration_seconds_count"},
		} {
			if !hasSeries(body, series[0], series[1:]...) {
				missing = append(missing, fmt.Sprint(series))
			}
		}
		if !hasSeries(body, "prober_probe_total", `pod="probed-n1"`, `pod_uid="`+string(p.UID)+`"`, `probe_type="Readiness"`, `result="successful"`) {
			missing = append(missing, "prober_probe_total for the pod's successful readiness probe")
		}
		return len(missing) == 0, fmt.Sprintf("missing %q", missing)
	})
	n.removeAllAndWait()
	eventually(t, 30*time.Second, "kubelet_running_pods 0 once the pod is gone", func() (bool, string) {
		body, err := n.metrics()
		return err == nil && strings.Contains(body, "\nkubelet_running_pods 0\n"), fmt.Sprint(err)
	})
}

// metrics is GET /metrics on the read-only port.
func (n *node) metrics() (string, error) {
	return harness.HTTPGet(n.url("/metrics"))
}

// hasSeries reports whether the exposition has a sample of name with a
// non-zero value whose labels include every one of labels (k="v").
func hasSeries(body, name string, labels ...string) bool {
	for line := range strings.SplitSeq(body, "\n") {
		var set, value string
		if rest, ok := strings.CutPrefix(line, name+"{"); ok {
			if set, value, ok = strings.Cut(rest, "} "); !ok {
				continue
			}
		} else if rest, ok := strings.CutPrefix(line, name+" "); ok {
			value = rest
		} else {
			continue
		}
		if value == "0" {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(","+set+",", ","+l+",")
		}
		if all {
			return true
		}
	}
	return false
}
