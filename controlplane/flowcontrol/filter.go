package flowcontrol

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"

	"berth/internal/errdefs"
)

// Config configures the filter.
type Config struct {
	// Informers lists FlowSchemas and PriorityLevelConfigurations; build
	// the filter before the factory starts.
	Informers informers.SharedInformerFactory
	// Client writes the objects' status conditions.
	Client flowcontrolclient.FlowcontrolV1Interface
	// ConcurrencyLimit is the server's total seats, shared among the
	// priority levels by their nominalConcurrencyShares (upstream:
	// --max-requests-inflight + --max-mutating-requests-inflight, 600 by
	// default, the default here).
	ConcurrencyLimit int
	// RequestWaitLimit bounds how long a request without a deadline
	// waits in its queue (upstream: a quarter of the 60 s request
	// timeout, 15 s, the default).
	RequestWaitLimit time.Duration
}

// Filter is API Priority and Fairness for one server.
type Filter struct {
	cfg Config
	fc  utilflowcontrol.Interface
}

// New validates cfg and builds the filter; Run must run for it to follow
// configuration changes (until then it knows only the mandatory objects).
func New(cfg Config) (*Filter, error) {
	if cfg.Informers == nil || cfg.Client == nil {
		return nil, fmt.Errorf("flowcontrol: Informers and Client are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.ConcurrencyLimit == 0 {
		cfg.ConcurrencyLimit = 600
	}
	if cfg.ConcurrencyLimit < 0 {
		return nil, fmt.Errorf("flowcontrol: ConcurrencyLimit %d: must be positive: %w", cfg.ConcurrencyLimit, errdefs.ErrInvalidArgument)
	}
	if cfg.RequestWaitLimit == 0 {
		cfg.RequestWaitLimit = 15 * time.Second
	}
	registerMetrics()
	return &Filter{cfg: cfg, fc: utilflowcontrol.New(cfg.Informers, cfg.Client, cfg.ConcurrencyLimit)}, nil
}

// longRunning are kube-apiserver's long-running requests: watches (which
// APF still classifies, holding a seat only until the watch is
// initialized) and the streaming subresources (which it does not).
var longRunning = filters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
	sets.NewString("attach", "exec", "proxy", "log", "portforward"))

// Wrap returns next behind the filter: every request is classified
// (the request info and user must be in its context), answered 429 with
// Retry-After when its priority level refuses it, and otherwise served
// with the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID headers set.
func (f *Filter) Wrap(next http.Handler) http.Handler {
	estimator := fcrequest.NewWorkEstimator(noObjectCounts, f.fc.GetInterestedWatchCount,
		fcrequest.DefaultWorkEstimatorConfig(), f.fc.GetMaxSeats)
	return filters.WithPriorityAndFairness(next, longRunning, f.fc, estimator, f.cfg.RequestWaitLimit)
}

// noObjectCounts: berth keeps no object counts, so lists are estimated at
// the minimum seats.
func noObjectCounts(string) (storage.Stats, error) {
	return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
}

// Run follows the configuration (and writes the objects' status
// conditions) until ctx ends.
func (f *Filter) Run(ctx context.Context) error {
	filters.StartPriorityAndFairnessWatermarkMaintenance(ctx.Done())
	return f.fc.Run(ctx.Done())
}
