package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/controlplane/apiserver"
	"berth/controlplane/controller/certificates"
	"berth/controlplane/controller/manager"
	"berth/controlplane/leaderelect"
	"berth/controlplane/pki"
	"berth/controlplane/scheduler"
)

// The scheduler's leader-election Lease, as kube-scheduler's.
const (
	SchedulerLeaseNamespace = "kube-system"
	SchedulerLeaseName      = "kube-scheduler"
)

// LoopbackUser is the identity of the server's own clients (the controller
// manager and the scheduler running inside it), as kube-apiserver's
// loopback client: a member of system:masters.
const LoopbackUser = "system:apiserver"

// loopbackAuthenticator accepts the in-memory loopback token as
// LoopbackUser and defers every other request to next.
type loopbackAuthenticator struct {
	token string
	next  apiserver.Authenticator
}

// newLoopbackToken is a random bearer token that lives only in this process.
func newLoopbackToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("server: loopback token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Authenticate implements apiserver.Authenticator.
func (a loopbackAuthenticator) Authenticate(r *http.Request) (user.Info, bool) {
	if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(a.token)) == 1 {
		return &user.DefaultInfo{Name: LoopbackUser, Groups: []string{"system:masters", user.AllAuthenticated}}, true
	}
	return a.next.Authenticate(r)
}

// loopbackConfig is the client configuration of the in-process components:
// the bound address, the cluster CA, the loopback token.
func loopbackConfig(host string, caPEM []byte, token string) *rest.Config {
	return &rest.Config{
		Host:            "https://" + host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             manager.DefaultQPS,
		Burst:           manager.DefaultBurst,
	}
}

// component is one long-running part of the server.
type component struct {
	name string
	run  func(ctx context.Context) error
}

// components builds the components beside the apiserver other than the
// namespace controller, admission's and flow control's: the CSR signer, the
// ClusterRole aggregation, the service repair, the metrics API, the default
// ServiceCIDR, the kubernetes Service, the custom resources, the aggregator,
// and the controller manager and the scheduler (their leader metric
// registered).
func (s *Server) components(b *backend, f *frontEnd, port int, id string, metricsAPI, aggComp component) ([]component, error) {
	csrComp, err := certificatesComponent(f.rc, b.creds, s.cfg.Logger)
	if err != nil {
		return nil, err
	}
	repairComp, err := repairComponent(s.cfg.ServiceRepairInterval, f.rc, b.repairers)
	if err != nil {
		return nil, err
	}
	k8sSvc, err := kubernetesServiceComponent(s.cfg, b.factory, b.svcAlloc, f.rc, port)
	if err != nil {
		return nil, err
	}
	comps := []component{csrComp, f.auth.component(), repairComp, metricsAPI, {name: "default-service-cidr", run: b.dsc.run},
		k8sSvc, f.crs.component(), aggComp}
	leaders := newLeaderMetrics()
	more, err := s.controlPlaneComponents(f.rc, id, leaders)
	if err != nil {
		return nil, err
	}
	if err := registerReplacing(s.cfg.Metrics, leaders); err != nil {
		return nil, fmt.Errorf("server: metrics: %w", err)
	}
	return append(comps, more...), nil
}

// controlPlaneComponents builds the controller manager and the scheduler
// the configuration enables, both on the loopback client.
func (s *Server) controlPlaneComponents(rc *rest.Config, id string, leaders *leaderMetrics) ([]component, error) {
	cfg := s.cfg
	var out []component
	if cfg.Enabled(ComponentControllers) {
		client, dyn, err := manager.ClientsFor(rc)
		if err != nil {
			return nil, err
		}
		mgr, err := manager.New(manager.Config{
			Client: client, Dynamic: dyn, Identity: id,
			LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
			Controllers:   cfg.Controllers,
			NodeIPAM:      cfg.NodeIPAM,
			NodeLifecycle: cfg.NodeLifecycle,
			RootCA:        rc.CAData, // the cluster CA the loopback client trusts
			Logger:        cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
		leaders.add(manager.DefaultLeaseName, mgr.Leading)
		out = append(out, component{name: "controller-manager", run: mgr.Run})
	}
	if cfg.Enabled(ComponentScheduler) {
		src := rest.CopyConfig(rc)
		src.UserAgent = "berth-scheduler"
		client, err := kubernetes.NewForConfig(src)
		if err != nil {
			return nil, fmt.Errorf("server: scheduler client: %w", err)
		}
		schedCfg := scheduler.Config{Client: client, Logger: cfg.Logger.With("component", "scheduler"), Metrics: cfg.Metrics}
		// A Scheduler runs once: each leadership term builds its own with
		// a fresh informer factory.
		term := func(ctx context.Context) error {
			c := schedCfg
			c.Informers = informers.NewSharedInformerFactory(client, 0)
			defer c.Informers.Shutdown()
			sched, err := scheduler.New(c)
			if err != nil {
				return err
			}
			return sched.Run(ctx)
		}
		el, err := leaderelect.New(leaderelect.Config{
			Client: client, Namespace: SchedulerLeaseNamespace, Name: SchedulerLeaseName, Identity: id,
			Timing: cfg.leaderElection(), Logger: cfg.Logger.With("component", "scheduler"),
		})
		if err != nil {
			return nil, fmt.Errorf("server: scheduler: %w", err)
		}
		leaders.add(SchedulerLeaseName, el.Leading)
		out = append(out, component{name: "scheduler", run: func(ctx context.Context) error { return el.Run(ctx, term) }})
	}
	return out, nil
}

// leaderMetrics exports leader_election_master_status{name} (1 while this
// server holds the Lease), as client-go's leader election metric.
type leaderMetrics struct {
	desc  *prometheus.Desc
	names []string
	funcs []func() bool
}

func newLeaderMetrics() *leaderMetrics {
	return &leaderMetrics{desc: prometheus.NewDesc("leader_election_master_status",
		"Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
		[]string{"name"}, nil)}
}

func (m *leaderMetrics) add(name string, leading func() bool) {
	m.names, m.funcs = append(m.names, name), append(m.funcs, leading)
}

// Describe implements prometheus.Collector.
func (m *leaderMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

// Collect implements prometheus.Collector.
func (m *leaderMetrics) Collect(ch chan<- prometheus.Metric) {
	for i, name := range m.names {
		v := 0.0
		if m.funcs[i]() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, v, name)
	}
}

// componentStopTimeout bounds waiting for the components on shutdown.
const componentStopTimeout = 20 * time.Second

// registerReplacing registers c, replacing a collector of the same
// description left by an earlier Run on the same registry.
func registerReplacing(reg prometheus.Registerer, c prometheus.Collector) error {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		reg.Unregister(are.ExistingCollector)
		return reg.Register(c)
	}
	return err
}

// certificatesComponent builds the CSR approver and signer (node client and
// serving certificates from the cluster CA). It is idempotent, so every
// server runs it, without leader election.
func certificatesComponent(rc *rest.Config, creds *pki.Bundle, log *slog.Logger) (component, error) {
	src := rest.CopyConfig(rc)
	src.UserAgent = "berth-certificates"
	client, err := kubernetes.NewForConfig(src)
	if err != nil {
		return component{}, fmt.Errorf("server: certificates client: %w", err)
	}
	ctrl, err := certificates.New(certificates.Config{
		Client: client, Signer: certificates.Signer{CA: creds.CA, Key: creds.CAKey},
		Logger: log.With("component", "certificates"),
	})
	if err != nil {
		return component{}, err
	}
	return component{name: "certificates", run: ctrl.Run}, nil
}
