package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth/controlplane/authentication"
	"berth/controlplane/pki"
	"berth/controlplane/server"
	"berth/internal/errdefs"
	"berth/up"
)

// newTokenCommand manages join tokens, as `kubeadm token`: bootstrap
// tokens kept as bootstrap.kubernetes.io/token secrets in kube-system.
func newTokenCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and delete the join tokens agents present (bootstrap tokens)",
		Long: `Manage join tokens, as "kubeadm token": bootstrap tokens <id>.<secret>
kept as the kube-system secrets bootstrap-token-<id>. An agent joins with
"berth agent --server URL --token-file FILE" holding one; once it has its node
certificate it no longer needs it. Expired tokens no longer authenticate.

The cluster is reached with --kubeconfig, else $KUBECONFIG, else the local
cluster's DATA-DIR/admin.kubeconfig (DATA-DIR from $` + dataDirEnv + `, default
` + up.DefaultDataDir + `).

  berth token create --ttl 2h --description "rack 4"
  berth token list
  berth token delete abcdef`,
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of an admin of the cluster")
	client := func() (kubernetes.Interface, error) { return tokenClient(kubeconfig) }
	cmd.AddCommand(newTokenCreateCommand(client), newTokenListCommand(client), newTokenDeleteCommand(client))
	return cmd
}

// tokenClient is the client of the token commands: of kubeconfig, else
// $KUBECONFIG, else the local cluster's admin kubeconfig.
func tokenClient(kubeconfig string) (kubernetes.Interface, error) {
	path := kubeconfig
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		dir := os.Getenv(dataDirEnv)
		if dir == "" {
			dir = up.DefaultDataDir
		}
		path = filepath.Join(dir, pki.KubeconfigFile)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("token: kubeconfig %s: %w", path, err)
	}
	return kubernetes.NewForConfig(cfg)
}

// newTokenCreateCommand is `berth token create`.
func newTokenCreateCommand(client func() (kubernetes.Interface, error)) *cobra.Command {
	var ttl time.Duration
	var description string
	var groups []string
	create := &cobra.Command{
		Use:   "create [TOKEN]",
		Short: "Create a join token (a random one unless TOKEN, <6 of [a-z0-9]>.<16 of [a-z0-9]>, is given) and print it",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 0 {
				return fmt.Errorf("token: --ttl %s: must not be negative (0: never expires): %w", ttl, errdefs.ErrInvalidArgument)
			}
			var token string
			if len(args) == 1 {
				token = args[0]
			} else {
				var err error
				if token, err = authentication.GenerateBootstrapToken(); err != nil {
					return err
				}
			}
			var expires time.Time
			if ttl > 0 {
				expires = time.Now().Add(ttl)
			}
			secret, err := authentication.BootstrapTokenSecret(token, description, expires, groups...)
			if err != nil {
				return fmt.Errorf("token: %w", err)
			}
			c, err := client()
			if err != nil {
				return err
			}
			if _, err := c.CoreV1().Secrets(secret.Namespace).Create(cmd.Context(), secret, metav1.CreateOptions{}); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("token: a token with ID %q already exists: %w", secret.Data[authentication.BootstrapTokenIDKey], errdefs.ErrAlreadyExists)
				}
				return fmt.Errorf("token: %w", err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), token)
			return err
		},
	}
	create.Flags().DurationVar(&ttl, "ttl", server.DefaultAgentTokenTTL, "how long the token authenticates (0: never expires)")
	create.Flags().StringVar(&description, "description", "", "a human-readable note on what the token is for")
	create.Flags().StringSliceVar(&groups, "groups", nil, "extra groups the token authenticates as (each system:bootstrappers:...)")
	return create
}

// newTokenListCommand is `berth token list`.
func newTokenListCommand(client func() (kubernetes.Interface, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the join tokens",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			return listTokens(cmd.Context(), c, cmd.OutOrStdout(), time.Now())
		},
	}
}

// newTokenDeleteCommand is `berth token delete`.
func newTokenDeleteCommand(client func() (kubernetes.Interface, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "delete TOKEN|ID...",
		Short: "Delete join tokens, named by the token or its ID",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			for _, arg := range args {
				id, _, _ := strings.Cut(arg, ".")
				if _, _, err := authentication.ParseBootstrapToken(id + ".0000000000000000"); err != nil {
					return fmt.Errorf("token: %q is neither a token nor a token ID: %w", arg, errdefs.ErrInvalidArgument)
				}
				err := c.CoreV1().Secrets(authentication.BootstrapTokenNamespace).Delete(cmd.Context(), authentication.BootstrapTokenSecretPrefix+id, metav1.DeleteOptions{})
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("token: no token with ID %q: %w", id, errdefs.ErrNotFound)
				}
				if err != nil {
					return fmt.Errorf("token: %w", err)
				}
				if _, err := fmt.Fprintf(cmd.OutOrStdout(), "bootstrap token %q deleted\n", id); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// listTokens prints the bootstrap tokens as `kubeadm token list` does:
// TOKEN TTL EXPIRES USAGES DESCRIPTION EXTRA GROUPS (TTL <forever> for no
// expiry, <invalid> once expired).
func listTokens(ctx context.Context, c kubernetes.Interface, out io.Writer, now time.Time) error {
	list, err := c.CoreV1().Secrets(authentication.BootstrapTokenNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	list.Items = slices.DeleteFunc(list.Items, func(s corev1.Secret) bool { return s.Type != authentication.BootstrapTokenSecretType })
	slices.SortFunc(list.Items, func(a, b corev1.Secret) int { return strings.Compare(a.Name, b.Name) })
	w := tabwriter.NewWriter(out, 10, 4, 3, ' ', 0)
	fmt.Fprintln(w, "TOKEN\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
	for _, s := range list.Items {
		d := s.Data
		ttl, expires := "<forever>", "<never>"
		if exp := string(d[authentication.BootstrapTokenExpirationKey]); exp != "" {
			expires = exp
			if expired, left := authentication.BootstrapTokenExpiry(&s, now); expired {
				ttl = "<invalid>"
			} else {
				ttl = duration.ShortHumanDuration(left)
			}
		}
		var usages []string
		for k, v := range d {
			if u, ok := strings.CutPrefix(k, "usage-bootstrap-"); ok && string(v) == "true" {
				usages = append(usages, u)
			}
		}
		slices.Sort(usages)
		desc := string(d[authentication.BootstrapTokenDescriptionKey])
		if desc == "" {
			desc = "<none>"
		}
		groups := string(d[authentication.BootstrapTokenExtraGroupsKey])
		if groups == "" {
			groups = "<none>"
		}
		fmt.Fprintf(w, "%s.%s\t%s\t%s\t%s\t%s\t%s\n", d[authentication.BootstrapTokenIDKey], d[authentication.BootstrapTokenSecretKey],
			ttl, expires, strings.Join(usages, ","), desc, groups)
	}
	return w.Flush()
}
