package critest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeService implements runtime.v1.RuntimeService over the Server's state.
type runtimeService struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	s *Server
}

// sandbox is one pod sandbox.
type sandbox struct {
	id        string
	name      string // reserved name
	cfg       *runtimeapi.PodSandboxConfig
	handler   string
	state     runtimeapi.PodSandboxState
	createdAt int64
	ip        string
}

func (sb *sandbox) hostNetwork() bool {
	return sb.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
}

func (sb *sandbox) status() *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.id,
		Metadata:       sb.cfg.GetMetadata(),
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Labels:         maps.Clone(sb.cfg.GetLabels()),
		Annotations:    maps.Clone(sb.cfg.GetAnnotations()),
		RuntimeHandler: sb.handler,
	}
	if ns := sb.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns != nil {
		st.Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: ns}}
	}
	return st
}

func (sb *sandbox) item() *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id:             sb.id,
		Metadata:       sb.cfg.GetMetadata(),
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Labels:         maps.Clone(sb.cfg.GetLabels()),
		Annotations:    maps.Clone(sb.cfg.GetAnnotations()),
		RuntimeHandler: sb.handler,
	}
}

// sandboxNotFound is containerd's answer for an unknown sandbox ID.
func sandboxNotFound(id string) error {
	return errf(codes.NotFound, "an error occurred when try to find sandbox %q: not found", id)
}

// getSandbox finds a sandbox; callers hold s.mu.
func (s *Server) getSandbox(id string) (*sandbox, error) {
	sb, ok := s.sandboxes[id]
	if !ok {
		return nil, sandboxNotFound(id)
	}
	return sb, nil
}

func (r *runtimeService) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	s := r.s
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md == nil {
		return nil, errf(codes.InvalidArgument, "sandbox config must include metadata")
	}
	if md.GetName() == "" || md.GetNamespace() == "" || md.GetUid() == "" {
		return nil, errf(codes.InvalidArgument, "sandbox config metadata must include name, namespace and uid: got name=%q namespace=%q uid=%q", md.GetName(), md.GetNamespace(), md.GetUid())
	}
	if h := req.GetRuntimeHandler(); h != "" && h != "runc" {
		return nil, errf(codes.Unknown, "failed to get sandbox runtime: no runtime for %q is configured", h)
	}
	name := strings.Join([]string{md.GetName(), md.GetNamespace(), md.GetUid(), fmt.Sprint(md.GetAttempt())}, "_")
	s.mu.Lock()
	defer s.mu.Unlock()
	if owner, ok := s.sandboxNames[name]; ok {
		return nil, errf(codes.AlreadyExists, "failed to reserve sandbox name %q: name %q is reserved for %q", name, name, owner)
	}
	sb := &sandbox{
		id: newID(), name: name, cfg: cfg, handler: req.GetRuntimeHandler(),
		state: runtimeapi.PodSandboxState_SANDBOX_READY, createdAt: now(),
	}
	if !sb.hostNetwork() {
		s.nextIP++
		sb.ip = fmt.Sprintf("10.88.%d.%d", (s.nextIP>>8)&0xff, s.nextIP&0xff)
	}
	s.sandboxes[sb.id] = sb
	s.sandboxNames[name] = sb.id
	s.emitSandbox(sb, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	s.emitSandbox(sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.id}, nil
}

func (r *runtimeService) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.getSandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	s.stopSandbox(sb)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// stopSandbox stops a sandbox's running containers and the sandbox; callers hold s.mu.
func (s *Server) stopSandbox(sb *sandbox) {
	for _, c := range s.containers {
		if c.sandboxID == sb.id && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			s.exit(c, s.stopExitCode, s.stopReason)
		}
	}
	if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		s.emitSandbox(sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	}
}

func (r *runtimeService) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.getSandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	// containerd forcibly stops a sandbox still running, then removes its containers.
	s.stopSandbox(sb)
	for _, c := range s.containers {
		if c.sandboxID == sb.id {
			s.removeContainer(c)
		}
	}
	delete(s.sandboxes, sb.id)
	delete(s.sandboxNames, sb.name)
	s.emitSandbox(sb, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (r *runtimeService) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.getSandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: sb.status(), Timestamp: now()}
	if req.GetVerbose() {
		raw, _ := json.Marshal(map[string]any{"runtimeHandler": sb.handler, "config": sb.cfg})
		resp.Info = map[string]string{"info": string(raw)}
	}
	return resp, nil
}

func (r *runtimeService) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	s := r.s
	f := req.GetFilter()
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []*runtimeapi.PodSandbox
	if id := f.GetId(); id != "" {
		if sb, ok := s.sandboxes[id]; ok && sandboxMatches(sb, f) {
			items = append(items, sb.item())
		}
		return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
	}
	items = make([]*runtimeapi.PodSandbox, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		if sandboxMatches(sb, f) {
			items = append(items, sb.item())
		}
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

// sandboxMatches applies a PodSandboxFilter's state and label selector.
func sandboxMatches(sb *sandbox, f *runtimeapi.PodSandboxFilter) bool {
	if f == nil {
		return true
	}
	if f.GetState() != nil && sb.state != f.GetState().GetState() {
		return false
	}
	return matchLabels(sb.cfg.GetLabels(), f.GetLabelSelector())
}

func (r *runtimeService) PodSandboxStats(_ context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.getSandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: s.sandboxStats(sb)}, nil
}

func (r *runtimeService) ListPodSandboxStats(_ context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	s := r.s
	f := req.GetFilter()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.PodSandboxStats
	for _, sb := range s.sandboxes {
		if (f.GetId() == "" || f.GetId() == sb.id) && matchLabels(sb.cfg.GetLabels(), f.GetLabelSelector()) {
			out = append(out, s.sandboxStats(sb))
		}
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}

// sandboxStats reports a sandbox's attributes and its containers' (zero) usage; callers hold s.mu.
func (s *Server) sandboxStats(sb *sandbox) *runtimeapi.PodSandboxStats {
	linux := &runtimeapi.LinuxPodSandboxStats{}
	for _, c := range s.containers {
		if c.sandboxID == sb.id {
			linux.Containers = append(linux.Containers, c.stats())
		}
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id: sb.id, Metadata: sb.cfg.GetMetadata(),
			Labels: maps.Clone(sb.cfg.GetLabels()), Annotations: maps.Clone(sb.cfg.GetAnnotations()),
		},
		Linux: linux,
	}
}
