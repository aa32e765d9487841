package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventsProbeWindow is how long GetContainerEvents waits for the runtime to
// either accept the stream (headers) or refuse it (a status). A runtime that
// refuses answers at once; one that accepts may send nothing until the first
// event, and after this window it is taken as accepting.
const eventsProbeWindow = time.Second

// GetContainerEvents subscribes to the runtime's container events. A runtime
// that lacks them (containerd 1.6) gives an error wrapping
// errdefs.ErrUnimplemented, so the caller can fall back to relisting. The
// channel is closed when ctx ends or the stream breaks; a caller seeing it
// closed while ctx is live should resubscribe or relist.
func (c *Client) GetContainerEvents(ctx context.Context) (<-chan *runtimeapi.ContainerEventResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.runtime.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		cancel()
		return nil, translate("GetContainerEvents", "", err)
	}
	accepted := make(chan error, 1)
	out := make(chan *runtimeapi.ContainerEventResponse)
	go func() {
		defer cancel()
		defer close(out)
		md, err := stream.Header()
		var first *runtimeapi.ContainerEventResponse
		if err == nil && md == nil {
			// Trailers only: the stream ended before it began; Recv has the status.
			first, err = stream.Recv()
		}
		accepted <- err
		if err != nil {
			return
		}
		if first != nil && !send(ctx, out, first) {
			return
		}
		for {
			ev, err := stream.Recv()
			if err != nil || !send(ctx, out, ev) {
				return
			}
		}
	}()
	timer := time.NewTimer(eventsProbeWindow)
	defer timer.Stop()
	select {
	case err := <-accepted:
		if err != nil {
			return nil, translate("GetContainerEvents", "", err)
		}
	case <-timer.C:
	case <-ctx.Done():
		return nil, translate("GetContainerEvents", "", ctx.Err())
	}
	return out, nil
}

// send delivers ev unless ctx ends first.
func send(ctx context.Context, out chan<- *runtimeapi.ContainerEventResponse, ev *runtimeapi.ContainerEventResponse) bool {
	select {
	case out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
