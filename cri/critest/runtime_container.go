package critest

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// container is one container.
type container struct {
	id         string
	name       string // reserved name
	sandboxID  string
	cfg        *runtimeapi.ContainerConfig
	imageID    string
	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	message    string
	logPath    string
	resources  *runtimeapi.LinuxContainerResources
	usage      ContainerUsage
}

// ContainerUsage is what the fake reports in a container's stats (zero
// until SetContainerUsage).
type ContainerUsage struct {
	CPUCoreNanoSeconds, WorkingSetBytes uint64
	// WritableLayerBytes and WritableLayerInodes, when set, are reported as
	// the container's writable layer.
	WritableLayerBytes, WritableLayerInodes uint64
}

// SetContainerUsage sets the usage the container's stats report.
func (s *Server) SetContainerUsage(id string, u ContainerUsage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(id)
	if err != nil {
		return err
	}
	c.usage = u
	return nil
}

func (c *container) status() *runtimeapi.ContainerStatus {
	st := &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    c.cfg.GetMetadata(),
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       c.cfg.GetImage(),
		ImageRef:    c.imageID,
		ImageId:     c.imageID,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      maps.Clone(c.cfg.GetLabels()),
		Annotations: maps.Clone(c.cfg.GetAnnotations()),
		Mounts:      c.cfg.GetMounts(),
		LogPath:     c.logPath,
	}
	if c.resources != nil {
		st.Resources = &runtimeapi.ContainerResources{Linux: c.resources}
	}
	return st
}

func (c *container) item() *runtimeapi.Container {
	return &runtimeapi.Container{
		Id:           c.id,
		PodSandboxId: c.sandboxID,
		Metadata:     c.cfg.GetMetadata(),
		Image:        c.cfg.GetImage(),
		ImageRef:     c.imageID,
		ImageId:      c.imageID,
		State:        c.state,
		CreatedAt:    c.createdAt,
		Labels:       maps.Clone(c.cfg.GetLabels()),
		Annotations:  maps.Clone(c.cfg.GetAnnotations()),
	}
}

func (c *container) stats() *runtimeapi.ContainerStats {
	ts := now()
	st := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id: c.id, Metadata: c.cfg.GetMetadata(),
			Labels: maps.Clone(c.cfg.GetLabels()), Annotations: maps.Clone(c.cfg.GetAnnotations()),
		},
		Cpu:    &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: c.usage.CPUCoreNanoSeconds}},
		Memory: &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{Value: c.usage.WorkingSetBytes}},
	}
	if c.usage.WritableLayerBytes > 0 || c.usage.WritableLayerInodes > 0 {
		st.WritableLayer = &runtimeapi.FilesystemUsage{
			Timestamp:  ts,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs"},
			UsedBytes:  &runtimeapi.UInt64Value{Value: c.usage.WritableLayerBytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: c.usage.WritableLayerInodes},
		}
	}
	return st
}

// containerNotFound is containerd's answer for an unknown container ID.
func containerNotFound(id string) error {
	return errf(codes.NotFound, "an error occurred when try to find container %q: not found", id)
}

// getContainer finds a container; callers hold s.mu.
func (s *Server) getContainer(id string) (*container, error) {
	c, ok := s.containers[id]
	if !ok {
		return nil, containerNotFound(id)
	}
	return c, nil
}

// stateName is containerd's name for a container state in its messages.
func stateName(st runtimeapi.ContainerState) string { return st.String() }

// exit moves a running (or created) container to EXITED; callers hold s.mu.
func (s *Server) exit(c *container, code int32, reason string) {
	if reason == "" {
		reason = "Completed"
		if code != 0 {
			reason = "Error"
		}
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.exitCode, c.reason, c.finishedAt = code, reason, now()
	s.emitContainer(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

// removeContainer kills (if running) and deletes a container; callers hold s.mu.
func (s *Server) removeContainer(c *container) {
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		s.exit(c, s.stopExitCode, s.stopReason)
	}
	delete(s.containers, c.id)
	delete(s.containerNames, c.name)
	s.emitContainer(c, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
}

// ExitContainer makes a running container exit with exitCode; reason ""
// becomes "Completed" for 0 and "Error" otherwise (as containerd reports).
// It fails for an unknown container or one that is not running.
func (s *Server) ExitContainer(id string, exitCode int32, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return fmt.Errorf("critest: ExitContainer: no container %q", id)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("critest: ExitContainer: container %q is %s, not running", id, stateName(c.state))
	}
	s.exit(c, exitCode, reason)
	return nil
}

func (r *runtimeService) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	s := r.s
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md == nil {
		return nil, errf(codes.InvalidArgument, "container config must include metadata")
	}
	if md.GetName() == "" {
		return nil, errf(codes.InvalidArgument, "container config metadata must include name")
	}
	if cfg.GetImage().GetImage() == "" {
		return nil, errf(codes.InvalidArgument, "container config must include image")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, errf(codes.NotFound, "failed to find sandbox id %q: not found", req.GetPodSandboxId())
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		// containerd 1.6 looks up the sandbox's task, which a stopped sandbox no longer has.
		return nil, errf(codes.NotFound, "failed to get sandbox container task: no running task found: task %s not found: not found", sb.id)
	}
	img := s.findImage(cfg.GetImage().GetImage())
	if img == nil {
		return nil, errf(codes.NotFound, "failed to get image %q: not found", cfg.GetImage().GetImage())
	}
	smd := sb.cfg.GetMetadata()
	name := strings.Join([]string{md.GetName(), smd.GetName(), smd.GetNamespace(), smd.GetUid(), fmt.Sprint(md.GetAttempt())}, "_")
	if owner, ok := s.containerNames[name]; ok {
		return nil, errf(codes.AlreadyExists, "failed to reserve container name %q: name %q is reserved for %q", name, name, owner)
	}
	c := &container{
		id: newID(), name: name, sandboxID: sb.id, cfg: cfg, imageID: img.id,
		state: runtimeapi.ContainerState_CONTAINER_CREATED, createdAt: now(),
		resources: cfg.GetLinux().GetResources(),
	}
	if dir, p := sb.cfg.GetLogDirectory(), cfg.GetLogPath(); dir != "" && p != "" {
		c.logPath = filepath.Join(dir, p)
	}
	s.containers[c.id] = c
	s.containerNames[name] = c.id
	s.emitContainer(c, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

func (r *runtimeService) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, errf(codes.Unknown, "container is in %s state", stateName(c.state))
	}
	if sb := s.sandboxes[c.sandboxID]; sb == nil || sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, errf(codes.Unknown, "sandbox container %q is not running", c.sandboxID)
	}
	c.state, c.startedAt = runtimeapi.ContainerState_CONTAINER_RUNNING, now()
	s.emitContainer(c, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	return &runtimeapi.StartContainerResponse{}, nil
}

func (r *runtimeService) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopTimeouts[req.GetContainerId()] = req.GetTimeout()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	// Like containerd: stopping a container that is not running is a no-op.
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		s.exit(c, s.stopExitCode, s.stopReason)
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (r *runtimeService) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	s.removeContainer(c)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (r *runtimeService) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	s := r.s
	f := req.GetFilter()
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := f.GetId(); id != "" {
		var out []*runtimeapi.Container
		if c, ok := s.containers[id]; ok && containerMatches(c, f) {
			out = append(out, c.item())
		}
		return &runtimeapi.ListContainersResponse{Containers: out}, nil
	}
	out := make([]*runtimeapi.Container, 0, len(s.containers))
	for _, c := range s.containers {
		if containerMatches(c, f) {
			out = append(out, c.item())
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// containerMatches applies a ContainerFilter's state, sandbox and label selector.
func containerMatches(c *container, f *runtimeapi.ContainerFilter) bool {
	if f == nil {
		return true
	}
	if f.GetState() != nil && c.state != f.GetState().GetState() {
		return false
	}
	if f.GetPodSandboxId() != "" && c.sandboxID != f.GetPodSandboxId() {
		return false
	}
	return matchLabels(c.cfg.GetLabels(), f.GetLabelSelector())
}

func (r *runtimeService) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: c.status()}
	if req.GetVerbose() {
		resp.Info = map[string]string{"info": fmt.Sprintf(`{"sandboxID":%q}`, c.sandboxID)}
	}
	return resp, nil
}

func (r *runtimeService) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		return nil, errf(codes.Unknown, "container %q is in %s state", c.id, stateName(c.state))
	}
	c.resources = req.GetLinux()
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

func (r *runtimeService) ReopenContainerLog(_ context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, errf(codes.Unknown, "container is not running")
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

func (r *runtimeService) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: c.stats()}, nil
}

func (r *runtimeService) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	s := r.s
	f := req.GetFilter()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.ContainerStats
	for _, c := range s.containers {
		if (f.GetId() == "" || f.GetId() == c.id) &&
			(f.GetPodSandboxId() == "" || f.GetPodSandboxId() == c.sandboxID) &&
			matchLabels(c.cfg.GetLabels(), f.GetLabelSelector()) {
			out = append(out, c.stats())
		}
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}
