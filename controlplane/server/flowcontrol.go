package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/controlplane/flowcontrol"
)

// flowControl is API Priority and Fairness: the filter the apiserver wraps
// its requests in, and the component (in every server, as upstream) that
// runs its config controller and the bootstrap-configuration ensurer.
type flowControl struct {
	wrap func(http.Handler) http.Handler
	comp component
}

// newFlowControl builds both on informers of the loopback client (whose
// requests, as system:masters, are exempt).
func newFlowControl(rc *rest.Config, concurrency int, log *slog.Logger) (*flowControl, error) {
	src := rest.CopyConfig(rc)
	src.UserAgent = "berth-flowcontrol"
	client, err := kubernetes.NewForConfig(src)
	if err != nil {
		return nil, fmt.Errorf("server: flowcontrol client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	filter, err := flowcontrol.New(flowcontrol.Config{Informers: factory, Client: client.FlowcontrolV1(), ConcurrencyLimit: concurrency})
	if err != nil {
		return nil, err
	}
	ensurer, err := flowcontrol.NewEnsurer(flowcontrol.EnsurerConfig{Informers: factory, Client: client.FlowcontrolV1(),
		Logger: log.With("component", "flowcontrol")})
	if err != nil {
		return nil, err
	}
	run := func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ensured := make(chan error, 1)
		go func() { ensured <- ensurer.Run(ctx) }()
		factory.Start(ctx.Done())
		err := filter.Run(ctx)
		cancel()
		if eerr := <-ensured; err == nil {
			err = eerr
		}
		factory.Shutdown()
		return err
	}
	return &flowControl{wrap: filter.Wrap, comp: component{name: "flowcontrol", run: run}}, nil
}
