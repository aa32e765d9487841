package critest

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// subscriber is one GetContainerEvents stream: an unbounded queue, so that
// emitting (under the server's lock) never blocks on a slow reader.
type subscriber struct {
	mu     sync.Mutex
	queue  []*runtimeapi.ContainerEventResponse
	signal chan struct{}
}

func (sub *subscriber) push(ev *runtimeapi.ContainerEventResponse) {
	sub.mu.Lock()
	sub.queue = append(sub.queue, ev)
	sub.mu.Unlock()
	select {
	case sub.signal <- struct{}{}:
	default:
	}
}

func (sub *subscriber) drain() []*runtimeapi.ContainerEventResponse {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	q := sub.queue
	sub.queue = nil
	return q
}

// emit sends an event to every subscriber; callers hold s.mu.
func (s *Server) emit(ev *runtimeapi.ContainerEventResponse) {
	for sub := range s.subscribers {
		sub.push(ev)
	}
}

// emitContainer sends a container's event with its status and its sandbox's; callers hold s.mu.
func (s *Server) emitContainer(c *container, t runtimeapi.ContainerEventType) {
	if len(s.subscribers) == 0 {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId: c.id, ContainerEventType: t, CreatedAt: now(),
		ContainersStatuses: []*runtimeapi.ContainerStatus{c.status()},
	}
	if sb := s.sandboxes[c.sandboxID]; sb != nil {
		ev.PodSandboxStatus = sb.status()
	}
	s.emit(ev)
}

// emitSandbox sends a sandbox's event (its ID as the container ID, as
// containerd does); callers hold s.mu.
func (s *Server) emitSandbox(sb *sandbox, t runtimeapi.ContainerEventType) {
	if len(s.subscribers) == 0 {
		return
	}
	s.emit(&runtimeapi.ContainerEventResponse{
		ContainerId: sb.id, ContainerEventType: t, CreatedAt: now(), PodSandboxStatus: sb.status(),
	})
}

func (r *runtimeService) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	s := r.s
	if s.eventsDisabled {
		return errf(codes.Unimplemented, "method GetContainerEvents not implemented")
	}
	sub := &subscriber{signal: make(chan struct{}, 1)}
	s.mu.Lock()
	s.subscribers[sub] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subscribers, sub)
		s.mu.Unlock()
	}()
	// Headers first: the client learns at once that the stream is accepted.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case <-sub.signal:
			for _, ev := range sub.drain() {
				if err := stream.Send(ev); err != nil {
					return err
				}
			}
		}
	}
}
