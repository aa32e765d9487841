package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/csi/driver"
	"berth/csi/provisioner"
)

// newCSILocalCommand maps the flags of `berth csi-local` onto driver.Config
// (and, with --kubeconfig, provisioner.Config).
func newCSILocalCommand() *cobra.Command {
	var (
		cfg         driver.Config
		logLevel    string
		kubeconfig  string
		provisioned bool
	)
	cmd := &cobra.Command{
		Use:   "csi-local",
		Short: "Run berth's CSI driver: node-local volumes (directories, or loop-mounted ext4 images) under a root dir",
		Long: `Run berth's CSI driver: node-local volumes (directories, or loop-mounted ext4
images) under a root dir.

With --kubeconfig it also provisions volumes for the cluster, as a driver pod's
external-provisioner sidecar would: claims of a StorageClass whose provisioner is
the driver's name get a volume on this node (WaitForFirstConsumer claims once the
scheduler picked this node; Immediate claims are taken by the first node's driver
to ask), and Released volumes with reclaimPolicy Delete are deleted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd, logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = log
			if provisioned && kubeconfig == "" {
				return fmt.Errorf("--provisioner: needs --kubeconfig to reach the apiserver")
			}
			var rc *rest.Config
			if kubeconfig != "" {
				var err error
				if rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
					return fmt.Errorf("--kubeconfig: %w", err)
				}
			}
			d, err := driver.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			if rc == nil {
				return d.Run(ctx)
			}
			return runWithProvisioner(ctx, d, rc, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Endpoint, "endpoint", "", "CSI socket to serve, unix:///path/csi.sock (required)")
	f.StringVar(&cfg.RootDir, "root-dir", "", "directory holding the volumes and their metadata (required)")
	f.StringVar(&cfg.NodeID, "node-id", "", "this node's name: the CSI node ID and topology value (required)")
	f.StringVar(&cfg.DriverName, "driver-name", driver.DefaultDriverName, "CSI driver name")
	f.StringVar(&cfg.RegistrationDir, "registration-dir", "", "the agent's plugin registration dir (<agent-root-dir>/plugins_registry); when set, the driver registers itself there")
	f.Int64Var(&cfg.MaxVolumesPerNode, "max-volumes-per-node", 0, "volume limit reported by NodeGetInfo (0: no limit)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; when set, the driver also provisions and deletes volumes for this node (the external-provisioner's job)")
	f.BoolVar(&provisioned, "provisioner", false, "require provisioning (an error without --kubeconfig); --kubeconfig alone turns it on")
	return cmd
}

// runWithProvisioner serves the driver and runs the provisioner against its
// socket until ctx ends or either fails (which stops the other).
func runWithProvisioner(ctx context.Context, d *driver.Driver, rc *rest.Config, log *slog.Logger) error {
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rc, "berth-csi-local"))
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	conn, err := grpc.NewClient("unix://"+d.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("csi-local: connect to own socket: %w", err)
	}
	defer conn.Close()
	p, err := provisioner.New(provisioner.Config{Client: client, Conn: conn, DriverName: d.Name(), NodeName: d.NodeID(), Logger: log})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- d.Run(ctx); cancel() }()
	go func() { errs <- p.Run(ctx); cancel() }()
	return errors.Join(<-errs, <-errs)
}
