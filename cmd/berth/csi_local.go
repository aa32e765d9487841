package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"berth/csi/driver"
)

// newCSILocalCommand maps the flags of `berth csi-local` onto driver.Config.
func newCSILocalCommand() *cobra.Command {
	var (
		cfg      driver.Config
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "csi-local",
		Short: "Run berth's CSI driver: node-local volumes (directories, or loop-mounted ext4 images) under a root dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			d, err := driver.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return d.Run(ctx)
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
	return cmd
}
