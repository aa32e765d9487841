package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"

	"berth/controlplane/leaderelect"
	"berth/controlplane/scheduler"
	"berth/controlplane/server"
)

// newSchedulerCommand runs the scheduler on its own against an apiserver.
func newSchedulerCommand() *cobra.Command {
	var (
		cfg            scheduler.Config
		kubeconfig     string
		metricsAddress string
		logLevel       string
		qps            float32
		burst          int
		leaderElect    bool
		lease          = leaderelect.Config{Namespace: server.SchedulerLeaseNamespace, Name: server.SchedulerLeaseName}
	)
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the pod scheduler on its own (as `berth server` runs it inside), against the apiserver of a kubeconfig",
		Long: `Run the pod scheduler against the apiserver named by a kubeconfig: pending
pods whose spec.schedulerName is --scheduler-name are filtered and scored
over the nodes as kube-scheduler's default profile does, and bound through
pods/binding.

  berth scheduler --kubeconfig /var/lib/berth/admin.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(cmd, logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = logger
			client, err := kubeconfigClient(kubeconfig, "berth-scheduler", func(rc *rest.Config) { rc.QPS, rc.Burst = qps, burst })
			if err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Client, cfg.Metrics = client, reg
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			if metricsAddress != "" {
				ln, err := net.Listen("tcp", metricsAddress)
				if err != nil {
					return fmt.Errorf("--metrics-address: %w", err)
				}
				srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
				go func() {
					if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
						cfg.Logger.Error("metrics server stopped", "err", err)
					}
				}()
				defer srv.Shutdown(context.Background())
				cfg.Logger.Info("serving metrics", "address", ln.Addr().String())
			}
			if !leaderElect {
				return runScheduler(ctx, cfg)
			}
			lease.Client, lease.Logger = client, cfg.Logger
			elector, err := leaderelect.New(lease)
			if err != nil {
				return err
			}
			return elector.Run(ctx, func(ctx context.Context) error { return runScheduler(ctx, cfg) })
		},
	}
	registerSchedulerFlags(cmd.Flags(), &cfg, &kubeconfig, &metricsAddress, &logLevel, &qps, &burst, &leaderElect, &lease)
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

// registerSchedulerFlags defines the flags of `berth scheduler` on f.
func registerSchedulerFlags(f *pflag.FlagSet, cfg *scheduler.Config, kubeconfig, metricsAddress, logLevel *string, qps *float32, burst *int, leaderElect *bool, lease *leaderelect.Config) {
	f.StringVar(kubeconfig, "kubeconfig", "", "kubeconfig of the apiserver to schedule for (required)")
	f.StringVar(&cfg.SchedulerName, "scheduler-name", scheduler.DefaultSchedulerName, "the spec.schedulerName this scheduler serves")
	f.Int32Var(&cfg.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0, "stop filtering once this percentage of nodes is feasible (0: adaptive, as kube-scheduler)")
	f.IntVar(&cfg.Parallelism, "parallelism", scheduler.DefaultParallelism, "goroutines filtering and scoring nodes")
	f.DurationVar(&cfg.InitialBackoff, "pod-initial-backoff", scheduler.DefaultInitialBackoff, "back-off after a pod's first failed attempt")
	f.DurationVar(&cfg.MaxBackoff, "pod-max-backoff", scheduler.DefaultMaxBackoff, "longest back-off between a pod's attempts")
	f.StringVar(metricsAddress, "metrics-address", "", "host:port to serve /metrics on (empty: not served)")
	f.StringVar(logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.Float32Var(qps, "kube-api-qps", 500, "queries per second towards the apiserver")
	f.IntVar(burst, "kube-api-burst", 1000, "burst of queries towards the apiserver")
	f.BoolVar(leaderElect, "leader-elect", false, "schedule only while holding the Lease --leader-elect-lease (for several schedulers on one cluster)")
	f.StringVar(&lease.Namespace, "leader-elect-namespace", lease.Namespace, "namespace of the leader-election Lease")
	f.StringVar(&lease.Name, "leader-elect-lease", lease.Name, "name of the leader-election Lease")
	f.DurationVar(&lease.LeaseDuration, "leader-elect-lease-duration", leaderelect.DefaultLeaseDuration, "how long a non-renewed Lease blocks other candidates")
	f.DurationVar(&lease.RenewDeadline, "leader-elect-renew-deadline", leaderelect.DefaultRenewDeadline, "how long the leader retries renewing before giving up")
	f.DurationVar(&lease.RetryPeriod, "leader-elect-retry-period", leaderelect.DefaultRetryPeriod, "how often candidates try to acquire or renew the Lease")
}

// runScheduler builds a scheduler with a fresh informer factory and runs
// it until ctx ends (a Scheduler runs once, so each leadership term gets
// its own).
func runScheduler(ctx context.Context, cfg scheduler.Config) error {
	cfg.Informers = informers.NewSharedInformerFactory(cfg.Client, 0)
	s, err := scheduler.New(cfg)
	if err != nil {
		return err
	}
	defer cfg.Informers.Shutdown()
	return s.Run(ctx)
}
