package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"berth/controlplane/controller/manager"
	"berth/controlplane/controller/nodeipam"
	"berth/controlplane/controller/nodelifecycle"
	"berth/controlplane/leaderelect"
	"berth/internal/errdefs"
)

// Defaults for Config.
const (
	DefaultListen             = "0.0.0.0:6443"
	DefaultCompactionInterval = 5 * time.Minute
)

// Components the server runs beside the apiserver, each under its own
// leader election; Config.Disable names those not to run.
const (
	ComponentControllers = "controllers"
	ComponentScheduler   = "scheduler"
)

// Components lists what Config.Disable accepts.
var Components = []string{ComponentControllers, ComponentScheduler}

// Config configures `berth server`.
type Config struct {
	// DataDir holds the credentials (see controlplane/pki), the embedded
	// etcd's data under DataDir/etcd, and the ListenAddressFile.
	DataDir string
	// Listen is the HTTPS address, host:port; port 0 picks a free port
	// (written to DataDir/ListenAddressFile once serving).
	Listen string
	// AdvertiseAddress is an extra address (IP or DNS name) clients reach the
	// server at: added to the serving certificate and published in /api.
	AdvertiseAddress string
	// EtcdServers, when set, are an external etcd cluster's client URLs,
	// used instead of the embedded member; EtcdCAFile, EtcdCertFile and
	// EtcdKeyFile are the TLS settings towards it.
	EtcdServers                           []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdCompactionInterval is how often old etcd revisions are compacted
	// (kube-apiserver's --etcd-compaction-interval); 0 disables it. Watches
	// from a compacted revision get 410 Gone.
	EtcdCompactionInterval time.Duration
	// Disable names components (of Components) not to run in this server:
	// "scheduler" to run `berth scheduler` apart, "controllers" to run no
	// controller manager.
	Disable []string
	// Controllers are the controller names (manager.Controllers) the
	// controller manager runs; empty runs them all.
	Controllers []string
	// NodeIPAM hands out node pod CIDRs (--cluster-cidr,
	// --node-cidr-mask-size); zero fields take nodeipam's defaults.
	NodeIPAM nodeipam.Options
	// NodeLifecycle marks silent nodes unreachable (--node-monitor-grace-period,
	// --node-startup-grace-period, --node-monitor-period); zero fields take
	// nodelifecycle's defaults.
	NodeLifecycle nodelifecycle.Options
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader
	// elections of the controller manager and the scheduler (see
	// leaderelect.Timing).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// EnableAdmissionPlugins and DisableAdmissionPlugins adjust
	// DefaultAdmissionPlugins (names of AdmissionPlugins, as
	// kube-apiserver's --enable-admission-plugins/--disable-admission-plugins).
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// EncryptionProviderConfig is an EncryptionConfiguration file
	// (kube-apiserver's --encryption-provider-config): the resources it
	// lists are encrypted in etcd; empty stores everything in clear.
	EncryptionProviderConfig string
	// TokenAuthFile is a static token file (--token-auth-file: CSV lines
	// token,user,uid[,"group1,group2"]); empty for none.
	TokenAuthFile string
	// AgentTokenTTL is how long the join token generated on first start
	// (DataDir/agent-token) authenticates; 0: DefaultAgentTokenTTL (24 h,
	// as kubeadm's), NoTokenExpiry: forever. `berth token create` makes
	// further tokens.
	AgentTokenTTL time.Duration
	// AnonymousAuth lets requests without credentials through as
	// system:anonymous (--anonymous-auth); RBAC then decides. Off: 401.
	AnonymousAuth bool
	// Profiling serves /debug/pprof to callers authorized for that
	// non-resource path (kube-apiserver's --profiling; `berth server` turns
	// it on by default, as upstream).
	Profiling bool
	// ServiceAccountIssuers are the service-account token issuers
	// (--service-account-issuer, repeatable): the first is the "iss" of
	// new tokens, all are accepted; default serviceaccount.DefaultIssuer.
	ServiceAccountIssuers []string
	// APIAudiences are the audiences the apiserver identifies as
	// (--api-audiences): a token must be for one of them; default the
	// issuers.
	APIAudiences []string
	// ServiceAccountSigningKeyFile is the PEM private key (ECDSA or RSA)
	// signing service-account tokens (--service-account-signing-key-file);
	// empty: DataDir/sa.key, generated on first start. Servers sharing one
	// etcd must sign with the same key (or accept each other's through
	// ServiceAccountKeyFiles).
	ServiceAccountSigningKeyFile string
	// ServiceAccountKeyFiles are PEM files of further public (or private)
	// keys accepted when verifying service-account tokens
	// (--service-account-key-file, repeatable), e.g. a previous signing key.
	ServiceAccountKeyFiles []string
	// ServiceAccountJWKSURI overrides the jwks_uri of the issuer discovery
	// document (--service-account-jwks-uri; https). Empty: this server's
	// advertised address with /openid/v1/jwks. The discovery documents
	// are served when the first issuer is an https URL.
	ServiceAccountJWKSURI string
	// ServiceClusterIPRange is the CIDR Services' cluster IPs come from
	// (--service-cluster-ip-range, default DefaultServiceClusterIPRange);
	// its first address is the kubernetes Service's.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the range NodePort and LoadBalancer
	// Services' node ports come from (--service-node-port-range, default
	// 30000-32767).
	ServiceNodePortRange string
	// ServiceRepairInterval is how often the allocations are reconciled
	// with the Services (default 3m; also once at start).
	ServiceRepairInterval time.Duration
	// MetricResolution is how often the node agents' resource metrics are
	// scraped for metrics.k8s.io (metrics-server's --metric-resolution);
	// default 15s.
	MetricResolution time.Duration
	// EndpointReconcilerTTL is the lifetime of this server's entry in the
	// kubernetes Service's endpoints unless renewed (every 10s); default 15s.
	EndpointReconcilerTTL time.Duration
	// MaxRequestsInFlight are the seats API Priority and Fairness shares
	// among the priority levels (kube-apiserver's --max-requests-inflight
	// plus --max-mutating-requests-inflight); 0: 600, as upstream.
	MaxRequestsInFlight int
	// Logger receives the server's log; nil discards.
	Logger *slog.Logger
	// Metrics registers the server's Prometheus metrics; Gatherer serves
	// them at /metrics. Both nil: a private registry.
	Metrics  prometheus.Registerer
	Gatherer prometheus.Gatherer
}

// Enabled reports whether a component (of Components) runs in this server.
func (c *Config) Enabled(component string) bool { return !slices.Contains(c.Disable, component) }

// Validate fills defaults and checks every field, naming the bad one.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("server config: data dir is required: %w", errdefs.ErrInvalidArgument)
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
		return fmt.Errorf("server config: listen address %q: want host:port: %w", c.Listen, errdefs.ErrInvalidArgument)
	}
	for _, s := range c.EtcdServers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("server config: etcd server %q: want an http:// or https:// URL: %w", s, errdefs.ErrInvalidArgument)
		}
	}
	if len(c.EtcdServers) == 0 && (c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != "") {
		return fmt.Errorf("server config: etcd TLS files given without etcd servers: %w", errdefs.ErrInvalidArgument)
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		return fmt.Errorf("server config: etcd cert file and key file go together: %w", errdefs.ErrInvalidArgument)
	}
	if c.EtcdCompactionInterval < 0 {
		return fmt.Errorf("server config: etcd compaction interval %s is negative: %w", c.EtcdCompactionInterval, errdefs.ErrInvalidArgument)
	}
	for _, d := range c.Disable {
		if !slices.Contains(Components, d) {
			return fmt.Errorf("server config: disable %q: want one of %v: %w", d, Components, errdefs.ErrInvalidArgument)
		}
	}
	for _, n := range c.Controllers {
		if !slices.Contains(manager.Controllers, n) {
			return fmt.Errorf("server config: controller %q: want some of %v: %w", n, manager.Controllers, errdefs.ErrInvalidArgument)
		}
	}
	if err := validateServices(c); err != nil {
		return err
	}
	if err := c.NodeIPAM.Validate(); err != nil {
		return fmt.Errorf("server config: %w", err)
	}
	if err := c.NodeLifecycle.Validate(); err != nil {
		return fmt.Errorf("server config: %w", err)
	}
	if err := validateAdmissionPlugins(c.EnableAdmissionPlugins, c.DisableAdmissionPlugins); err != nil {
		return fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	if err := c.validateEncryption(); err != nil {
		return err
	}
	if err := validateAuth(c); err != nil {
		return err
	}
	if err := validateServiceAccounts(c); err != nil {
		return err
	}
	timing := c.leaderElection()
	if err := timing.Validate(); err != nil {
		return fmt.Errorf("server config: %w", err)
	}
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = timing.LeaseDuration, timing.RenewDeadline, timing.RetryPeriod
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil && c.Gatherer == nil {
		reg := prometheus.NewRegistry()
		c.Metrics, c.Gatherer = reg, reg
	}
	return nil
}

// leaderElection is the timing of the server's leader elections.
func (c *Config) leaderElection() leaderelect.Timing {
	return leaderelect.Timing{LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod}
}
