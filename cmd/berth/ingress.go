package main

import (
	"github.com/spf13/cobra"

	"berth/ingress"
)

// newIngressCommand runs the ingress controller on its own, as `berth up`
// runs it inside (for a node of a cluster `berth up` does not run).
func newIngressCommand() *cobra.Command {
	var (
		cfg        ingress.Config
		kubeconfig string
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "ingress",
		Short: "Run the ingress controller on its own (as `berth up` runs it inside), against the apiserver of a kubeconfig",
		Long: `Run berth's ingress controller on this node: it serves the Ingresses of the
IngressClasses whose spec.controller is --controller-name as an HTTP and
HTTPS reverse proxy to the backend Services' ready endpoints, and sets their
status.loadBalancer to --status-address.

The kubeconfig should be the controller's own identity, bound to the
ClusterRole system:berth-ingress-controller (read ingresses, ingressclasses,
services, endpointslices and secrets; update ingresses/status): berth up
issues DATA-DIR/ingress-controller.crt for the user of that name. The
IngressClass is not created here: apply one naming the controller.

  berth ingress --kubeconfig ingress.kubeconfig --status-address 192.0.2.10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(cmd, logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = logger
			if cfg.Client, err = kubeconfigClient(kubeconfig, "berth-ingress", nil); err != nil {
				return err
			}
			c, err := ingress.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return c.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the apiserver, with the controller's own identity (required)")
	f.StringVar(&cfg.ControllerName, "controller-name", ingress.DefaultControllerName, "serve the IngressClasses whose spec.controller is this")
	f.StringVar(&cfg.HTTPAddress, "http-address", ingress.DefaultHTTPAddress, "host:port of the HTTP listener")
	f.StringVar(&cfg.HTTPSAddress, "https-address", ingress.DefaultHTTPSAddress, "host:port of the HTTPS listener")
	f.StringVar(&cfg.StatusAddress, "status-address", "", "IP or host name written to the served Ingresses' status.loadBalancer (empty: no status)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}
