package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/plugin"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"berth/controlplane/pki"
	"berth/internal/kubectli18n"
	"berth/up"
)

// dataDirEnv names the environment variable that points `berth kubectl`
// at a cluster data dir other than up.DefaultDataDir. (A flag would
// collide with kubectl's own: every argument belongs to kubectl.)
const dataDirEnv = "BERTH_DATA_DIR"

// newKubectlCommand is kubectl itself (k8s.io/kubectl), as k3s embeds it:
// every argument goes to kubectl's root command unparsed, and kubectl
// decides the output and the exit code (it exits the process itself).
func newKubectlCommand() *cobra.Command {
	return &cobra.Command{
		Use:   kubectli18n.Subcommand + " [kubectl arguments]",
		Short: "Run kubectl (built in) against this machine's cluster",
		Long: `Run kubectl, built into berth, with all arguments passed to it unchanged:
"berth kubectl get pods -A" is "kubectl get pods -A".

When neither --kubeconfig nor $KUBECONFIG is given and the local cluster's
admin kubeconfig exists, kubectl uses it: DATA-DIR/admin.kubeconfig, the
file "berth up" and "berth server" write, with DATA-DIR taken from
$` + dataDirEnv + ` (default ` + up.DefaultDataDir + `). Otherwise kubectl's own
defaults apply ($HOME/.kube/config).

"berth kubectl --help" is kubectl's own help; "berth help kubectl" is this.

  berth kubectl get nodes
  BERTH_DATA_DIR=/tmp/cluster berth kubectl apply -f examples/`,
		DisableFlagParsing: true,
		// kubectl prints its own errors and usage.
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// As k3s does: through $KUBECONFIG, which every kubectl
			// command honours ("kubectl config" has a --kubeconfig flag
			// of its own), and below an explicit --kubeconfig.
			if path := defaultKubeconfig(os.Getenv); path != "" {
				if err := os.Setenv("KUBECONFIG", path); err != nil {
					return err
				}
			}
			streams := genericiooptions.IOStreams{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr()}
			kubectl := newEmbeddedKubectl(streams, args)
			if err := cli.RunNoErrOutput(kubectl); err != nil {
				// As kubectl's main: print the error the kubectl way and
				// exit with kubectl's code.
				cmdutil.CheckErr(err)
			}
			return nil
		},
	}
}

// newEmbeddedKubectl builds kubectl's root command for args, configured as
// kubectl's own main configures it.
func newEmbeddedKubectl(streams genericiooptions.IOStreams, args []string) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true).
		WithDeprecatedPasswordFlag().
		WithDiscoveryBurst(300).
		WithDiscoveryQPS(50.0).
		WithWarningPrinter(streams)
	kubectl := kubectlcmd.NewDefaultKubectlCommandWithArgs(kubectlcmd.KubectlOptions{
		PluginHandler: kubectlcmd.NewDefaultPluginHandler(plugin.ValidPluginFilenamePrefixes),
		// As kubectl's own os.Args: its name, then the arguments, so
		// plugins (kubectl-NAME on PATH) are found as kubectl finds them.
		Arguments:   append([]string{"kubectl"}, args...),
		ConfigFlags: flags,
		IOStreams:   streams,
	})
	kubectl.SetArgs(args)
	kubectl.SetIn(streams.In)
	kubectl.SetOut(streams.Out)
	kubectl.SetErr(streams.ErrOut)
	return kubectl
}

// defaultKubeconfig is the local cluster's admin kubeconfig when kubectl
// would otherwise fall back to its own default: $KUBECONFIG unset (or
// empty) and the file present; "" otherwise.
func defaultKubeconfig(getenv func(string) string) string {
	if getenv("KUBECONFIG") != "" {
		return ""
	}
	dataDir := getenv(dataDirEnv)
	if dataDir == "" {
		dataDir = up.DefaultDataDir
	}
	path := filepath.Join(dataDir, pki.KubeconfigFile)
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}
