package flowcontrol

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// metricsPrefix names the families Metrics gathers.
const metricsPrefix = "apiserver_flowcontrol_"

// Metrics gathers upstream's API Priority and Fairness metrics
// (apiserver_flowcontrol_nominal_limit_seats, _current_executing_requests,
// _rejected_requests_total, ...), which k8s.io/apiserver keeps in its
// process-wide legacy registry (registered there by New): only those
// families, so nothing else the libraries registered there leaks into the
// server's /metrics.
func Metrics() prometheus.Gatherer {
	return prefixGatherer{legacyregistry.DefaultGatherer}
}

// registerMetrics registers upstream's metrics (once per process): the
// filter's gauges work only once registered.
func registerMetrics() { fcmetrics.Register() }

type prefixGatherer struct{ g prometheus.Gatherer }

func (p prefixGatherer) Gather() ([]*dto.MetricFamily, error) {
	all, err := p.g.Gather()
	var out []*dto.MetricFamily
	for _, mf := range all {
		if strings.HasPrefix(mf.GetName(), metricsPrefix) {
			out = append(out, mf)
		}
	}
	return out, err
}
