package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"berth/controlplane/controller/manager"
	"berth/controlplane/controller/nodeipam"
	"berth/controlplane/controller/nodelifecycle"
	"berth/controlplane/metricsapi"
	"berth/controlplane/server"
	"berth/controlplane/serviceaccount"
)

func newServerCommand() *cobra.Command {
	var cfg server.Config
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane: a Kubernetes-compatible apiserver on etcd (embedded by default), the controllers and the scheduler",
		Long: `Run the control plane: a Kubernetes-compatible apiserver over HTTPS, storing
objects in etcd (an embedded member under DATA-DIR/etcd unless --etcd-servers
names an external cluster), with the controller manager and the scheduler
inside, each leader-elected through a Lease in kube-system
(berth-controller-manager, kube-scheduler) so several servers can share one
etcd. --disable scheduler leaves scheduling to a separate ` + "`berth scheduler`" + `.

On first start it generates into DATA-DIR a cluster CA, the serving
certificate, an admin client certificate with DATA-DIR/admin.kubeconfig, and
the agents' join token DATA-DIR/agent-token (a bootstrap token <id>.<secret>,
kept as the kube-system secret bootstrap-token-<id>, valid for --token-ttl;
"berth token" makes more), and the service-account
token signing key DATA-DIR/sa.key (unless --service-account-signing-key-file
names one); later starts reuse them. Once serving, it writes the address local
clients reach it at to DATA-DIR/listen-address.

Several servers on one etcd must share the cluster CA (DATA-DIR/ca.crt and
ca.key: copy them into each server's DATA-DIR before its first start) and the
service-account signing key (DATA-DIR/sa.key, or the same
--service-account-signing-key-file), and use the same --service-account-issuer
and --api-audiences; otherwise one server refuses the certificates and tokens
another issued.

  berth server --data-dir /var/lib/berth
  kubectl --kubeconfig /var/lib/berth/admin.kubeconfig get namespaces`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Metrics, cfg.Gatherer = reg, reg
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(context.Background())
			defer stop()
			return srv.Run(ctx)
		},
	}
	registerServerFlags(cmd.Flags(), &cfg)
	_ = cmd.MarkFlagRequired("data-dir")
	return cmd
}

// registerServerFlags defines the flags of `berth server` on f.
func registerServerFlags(f *pflag.FlagSet, cfg *server.Config) {
	f.StringVar(&cfg.DataDir, "data-dir", "", "directory for credentials, the embedded etcd and state (required)")
	f.StringVar(&cfg.Listen, "listen", server.DefaultListen, "HTTPS listen address host:port (port 0 picks a free one)")
	f.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address clients reach this server at (added to the serving certificate)")
	f.StringSliceVar(&cfg.EtcdServers, "etcd-servers", nil, "external etcd client URLs (comma-separated); empty runs an embedded etcd")
	f.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "CA file verifying the external etcd servers")
	f.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "client certificate for the external etcd")
	f.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "client key for the external etcd")
	f.DurationVar(&cfg.EtcdCompactionInterval, "etcd-compaction-interval", server.DefaultCompactionInterval, "how often old etcd revisions are compacted (0 disables)")
	f.StringSliceVar(&cfg.Disable, "disable", nil, "components not to run in this server (comma-separated): "+strings.Join(server.Components, ", "))
	f.StringSliceVar(&cfg.Controllers, "controllers", nil, "controllers to run (comma-separated; default all): "+strings.Join(manager.Controllers, ", "))
	f.StringVar(&cfg.NodeIPAM.ClusterCIDR, "cluster-cidr", nodeipam.DefaultClusterCIDR, "IPv4 range the nodes' pod CIDRs are allocated from")
	f.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", server.DefaultServiceClusterIPRange, "CIDR the Services' cluster IPs come from (its first address is the kubernetes Service's)")
	f.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", server.DefaultServiceNodePortRange, "port range NodePort and LoadBalancer Services' node ports come from")
	f.DurationVar(&cfg.MetricResolution, "metric-resolution", metricsapi.DefaultResolution, "how often the node agents' resource metrics are scraped for metrics.k8s.io (kubectl top)")
	f.DurationVar(&cfg.ServiceRepairInterval, "service-repair-interval", server.DefaultServiceRepairInterval, "how often the cluster IP and node port allocations are reconciled with the Services")
	_ = f.MarkHidden("service-repair-interval")
	f.IntVar(&cfg.NodeIPAM.NodeCIDRMaskSize, "node-cidr-mask-size", nodeipam.DefaultNodeCIDRMaskSize, "prefix length of each node's pod CIDR")
	f.DurationVar(&cfg.NodeLifecycle.GracePeriod, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod, "how long a node may go without renewing its Lease before it is marked unreachable")
	f.DurationVar(&cfg.NodeLifecycle.StartupGracePeriod, "node-startup-grace-period", nodelifecycle.DefaultStartupGracePeriod, "the grace period of a node that never reported Ready")
	f.DurationVar(&cfg.NodeLifecycle.MonitorPeriod, "node-monitor-period", nodelifecycle.DefaultMonitorPeriod, "how often the nodes are checked")
	f.StringSliceVar(&cfg.EnableAdmissionPlugins, "enable-admission-plugins", nil, "admission plugins to enable beside the defaults ("+strings.Join(server.DefaultAdmissionPlugins, ", ")+"), comma-separated; known: "+strings.Join(server.AdmissionPlugins, ", "))
	f.StringSliceVar(&cfg.DisableAdmissionPlugins, "disable-admission-plugins", nil, "admission plugins to disable, comma-separated (order does not matter: they run in upstream's order)")
	f.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", "", "EncryptionConfiguration file (apiserver.config.k8s.io/v1): the resources it lists are encrypted in etcd (aescbc, aesgcm, secretbox, identity; the first provider encrypts, all decrypt)")
	f.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", `static bearer tokens: a CSV file of token,user,uid[,"group1,group2"] lines`)
	f.Var(tokenTTLFlag{&cfg.AgentTokenTTL}, "token-ttl", `how long the join token generated on first start (DATA-DIR/agent-token) authenticates, as kubeadm init's (0: never expires; default 24h0m0s); "berth token create" makes more`)
	f.BoolVar(&cfg.Profiling, "profiling", true, "serve the Go runtime's profiles at /debug/pprof/ (net/http/pprof) to callers authorized for that path (system:masters; an RBAC rule on nonResourceURLs /debug/pprof/*)")
	f.BoolVar(&cfg.AnonymousAuth, "anonymous-auth", false, "let requests without credentials through as system:anonymous (group system:unauthenticated), for RBAC to decide; off, they get 401")
	f.StringArrayVar(&cfg.ServiceAccountIssuers, "service-account-issuer", []string{serviceaccount.DefaultIssuer}, `service-account token issuer (the "iss" claim), a URL or a name; repeat it to accept tokens of more issuers: the first one issues new tokens`)
	f.StringSliceVar(&cfg.APIAudiences, "api-audiences", nil, "audiences the apiserver identifies as, comma-separated: a service-account token must be for one of them (default the --service-account-issuer values)")
	f.StringVar(&cfg.ServiceAccountSigningKeyFile, "service-account-signing-key-file", "", "PEM private key (ECDSA or RSA) signing service-account tokens (default DATA-DIR/"+serviceaccount.KeyFile+", generated on first start)")
	f.StringVar(&cfg.ServiceAccountJWKSURI, "service-account-jwks-uri", "", "the jwks_uri of the service-account issuer discovery document (/.well-known/openid-configuration), an https URL (default https://ADVERTISED-ADDRESS/openid/v1/jwks); the documents are served when the first --service-account-issuer is an https URL")
	f.StringArrayVar(&cfg.ServiceAccountKeyFiles, "service-account-key-file", nil, "PEM file of further public (or private) keys accepted when verifying service-account tokens, e.g. a previous signing key; repeatable")
}

// tokenTTLFlag is --token-ttl: a duration where 0 means never, as
// kubeadm's (server.NoTokenExpiry); unset leaves the server's default.
type tokenTTLFlag struct{ ttl *time.Duration }

func (f tokenTTLFlag) String() string {
	if f.ttl == nil || *f.ttl == 0 {
		return ""
	}
	if *f.ttl == server.NoTokenExpiry {
		return "0s"
	}
	return f.ttl.String()
}

func (f tokenTTLFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("%s: must not be negative (0: never expires)", s)
	}
	if d == 0 {
		d = server.NoTokenExpiry
	}
	*f.ttl = d
	return nil
}

func (tokenTTLFlag) Type() string { return "duration" }
