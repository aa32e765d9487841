// Command berth is the single binary of berth: node agent, control plane and tools.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"berth/internal/version"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "berth:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "berth",
		Short:         "berth runs Kubernetes pods on containerd, with the control plane they need",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCommand())
	root.AddCommand(newAgentCommand())
	root.AddCommand(newServerCommand())
	root.AddCommand(newSchedulerCommand())
	root.AddCommand(newCSILocalCommand())
	root.AddCommand(newUpCommand())
	root.AddCommand(newKubectlCommand())
	root.AddCommand(newIngressCommand())
	root.AddCommand(newTokenCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print berth's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.String())
			return err
		},
	}
}
