package server

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"berth/controlplane/controller"
	"berth/controlplane/controller/manager"
	nscontroller "berth/controlplane/controller/namespace"
)

// newNamespaceController builds the namespace controller on the loopback
// client. Every server runs it, with the controllers disabled too (a
// terminating namespace must empty whichever servers run): its deletes are
// idempotent, so several servers may run it together.
func newNamespaceController(rc *rest.Config, log *slog.Logger) (component, error) {
	client, _, err := manager.ClientsFor(rc)
	if err != nil {
		return component{}, err
	}
	mc := rest.CopyConfig(rc)
	mc.QPS, mc.Burst = manager.DefaultQPS, manager.DefaultBurst
	meta, err := metadata.NewForConfig(mc)
	if err != nil {
		return component{}, fmt.Errorf("server: namespace controller: metadata client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := nscontroller.New(nscontroller.Config{
		Config:   controller.Config{Client: client, Informers: factory, Logger: log},
		Metadata: meta,
	})
	if err != nil {
		return component{}, err
	}
	return component{name: "namespace-controller", run: func(ctx context.Context) error {
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		return ctrl.Run(ctx)
	}}, nil
}
