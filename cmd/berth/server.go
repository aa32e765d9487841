package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"berth/controlplane/server"
)

func newServerCommand() *cobra.Command {
	var cfg server.Config
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane: a Kubernetes-compatible apiserver on etcd (embedded by default)",
		Long: `Run the control plane: a Kubernetes-compatible apiserver over HTTPS, storing
objects in etcd (an embedded member under DATA-DIR/etcd unless --etcd-servers
names an external cluster).

On first start it generates into DATA-DIR a cluster CA, the serving
certificate, an admin client certificate with DATA-DIR/admin.kubeconfig, and
the agents' join token DATA-DIR/agent-token; later starts reuse them. Once
serving, it writes the bound address to DATA-DIR/listen-address.

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
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return srv.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", "", "directory for credentials, the embedded etcd and state (required)")
	f.StringVar(&cfg.Listen, "listen", server.DefaultListen, "HTTPS listen address host:port (port 0 picks a free one)")
	f.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address clients reach this server at (added to the serving certificate)")
	f.StringSliceVar(&cfg.EtcdServers, "etcd-servers", nil, "external etcd client URLs (comma-separated); empty runs an embedded etcd")
	f.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "CA file verifying the external etcd servers")
	f.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "client certificate for the external etcd")
	f.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "client key for the external etcd")
	f.DurationVar(&cfg.EtcdCompactionInterval, "etcd-compaction-interval", server.DefaultCompactionInterval, "how often old etcd revisions are compacted (0 disables)")
	_ = cmd.MarkFlagRequired("data-dir")
	return cmd
}
