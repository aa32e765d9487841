package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// newLogger is a long-running command's logger: text on its stderr, at the
// level of --log-level (debug, info, warn or error).
func newLogger(cmd *cobra.Command, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: l})), nil
}

// signalContext ends with parent or at SIGINT or SIGTERM: how a
// long-running command is stopped.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// kubeconfigClient is a client of the apiserver of kubeconfig, identified as
// userAgent; adjust (may be nil) changes its configuration first.
func kubeconfigClient(kubeconfig, userAgent string, adjust func(*rest.Config)) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %q: %w", kubeconfig, err)
	}
	rc.UserAgent = userAgent
	if adjust != nil {
		adjust(rc)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %q: %w", kubeconfig, err)
	}
	return client, nil
}
