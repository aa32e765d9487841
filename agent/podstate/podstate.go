// Package podstate is the agent's picture of what the container runtime holds
// for one pod: its sandboxes and containers, newest first, with the kubelet's
// labels already read back. The planner (agent/lifecycle) and the status
// computation (agent/status) reason over it; the PLEG (agent/pleg) builds it
// from CRI lists and statuses.
package podstate

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
)

// Sandbox is one pod sandbox as the runtime reports it.
type Sandbox struct {
	ID      string
	Attempt uint32
	// Ready is the CRI SANDBOX_READY state.
	Ready     bool
	CreatedAt time.Time
	// IPs are the pod's addresses, primary first (empty for host-network
	// sandboxes and sandboxes whose status was not read).
	IPs []string
	// HostNetwork reports a sandbox in the node's network namespace.
	HostNetwork bool
}

// ContainerState is the CRI state of a container.
type ContainerState int

// The container states, as CRI defines them.
const (
	ContainerUnknown ContainerState = iota
	ContainerCreated
	ContainerRunning
	ContainerExited
)

// String is the state's name, for logs.
func (s ContainerState) String() string {
	switch s {
	case ContainerCreated:
		return "created"
	case ContainerRunning:
		return "running"
	case ContainerExited:
		return "exited"
	default:
		return "unknown"
	}
}

// Container is one container (any attempt) of the pod.
type Container struct {
	ID        string
	SandboxID string
	Name      string
	// Hash is the spec hash the container was created from (cri.ContainerHash).
	Hash         uint64
	RestartCount int
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	// Reason and Message come from the runtime (Completed, Error, OOMKilled)
	// or, for the message, from the termination message file.
	Reason   string
	Message  string
	Image    string
	ImageRef string
	// TerminationMessagePath and Policy come from the container's annotations.
	TerminationMessagePath   string
	TerminationMessagePolicy string
	// GracePeriod is the pod's termination grace period recorded on the
	// container, used to stop containers whose pod spec is no longer known.
	GracePeriod *int64
	LogPath     string
}

// Pod is everything the runtime holds for one pod UID.
type Pod struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes, newest first.
	Sandboxes []Sandbox
	// Containers of every attempt, newest first.
	Containers []Container
}

// Sort orders sandboxes and containers newest first, the order every
// consumer expects.
func (p *Pod) Sort() {
	slices.SortStableFunc(p.Sandboxes, func(a, b Sandbox) int { return b.CreatedAt.Compare(a.CreatedAt) })
	slices.SortStableFunc(p.Containers, func(a, b Container) int { return b.CreatedAt.Compare(a.CreatedAt) })
}

// LatestSandbox is the newest sandbox, or nil.
func (p *Pod) LatestSandbox() *Sandbox {
	if p == nil || len(p.Sandboxes) == 0 {
		return nil
	}
	return &p.Sandboxes[0]
}

// Latest is the newest container with the name, or nil.
func (p *Pod) Latest(name string) *Container {
	if p == nil {
		return nil
	}
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	return nil
}

// Previous is the second newest container with the name (the one the status
// shows as lastState), or nil.
func (p *Pod) Previous(name string) *Container {
	if p == nil {
		return nil
	}
	seen := false
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			if seen {
				return &p.Containers[i]
			}
			seen = true
		}
	}
	return nil
}

// Running lists the containers in the running or unknown state (the ones
// that must be stopped before the pod is gone).
func (p *Pod) Running() []Container {
	var out []Container
	for _, c := range p.Containers {
		if c.State == ContainerRunning || c.State == ContainerUnknown {
			out = append(out, c)
		}
	}
	return out
}

// SandboxFromCRI converts a CRI sandbox (from a list) and, when available,
// its status (for IPs and the network namespace mode).
func SandboxFromCRI(s *runtimeapi.PodSandbox, st *runtimeapi.PodSandboxStatus) Sandbox {
	out := Sandbox{
		ID:        s.GetId(),
		Attempt:   s.GetMetadata().GetAttempt(),
		Ready:     s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: time.Unix(0, s.GetCreatedAt()),
	}
	if st != nil {
		out.Ready = st.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
		out.HostNetwork = st.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
		if ip := st.GetNetwork().GetIp(); ip != "" {
			out.IPs = append(out.IPs, ip)
		}
		for _, extra := range st.GetNetwork().GetAdditionalIps() {
			if extra.GetIp() != "" {
				out.IPs = append(out.IPs, extra.GetIp())
			}
		}
	}
	return out
}

// ContainerFromCRI converts a CRI container (from a list) and, when
// available, its status (for exit code, reason, times). Malformed kubelet
// annotations leave their fields zero.
func ContainerFromCRI(c *runtimeapi.Container, st *runtimeapi.ContainerStatus) Container {
	labels, annotations := c.GetLabels(), c.GetAnnotations()
	if st != nil {
		labels, annotations = st.GetLabels(), st.GetAnnotations()
	}
	info, _ := cri.ParseContainerInfo(labels, annotations)
	out := Container{
		ID:                       c.GetId(),
		SandboxID:                c.GetPodSandboxId(),
		Name:                     c.GetMetadata().GetName(),
		Hash:                     info.Hash,
		RestartCount:             info.RestartCount,
		State:                    stateFromCRI(c.GetState()),
		CreatedAt:                time.Unix(0, c.GetCreatedAt()),
		Image:                    c.GetImage().GetImage(),
		ImageRef:                 c.GetImageRef(),
		TerminationMessagePath:   info.TerminationMessagePath,
		TerminationMessagePolicy: string(info.TerminationMessagePolicy),
		GracePeriod:              info.PodTerminationGracePeriod,
	}
	if info.ContainerName != "" {
		out.Name = info.ContainerName
	}
	if st != nil {
		out.State = stateFromCRI(st.GetState())
		out.StartedAt = unixNanoOrZero(st.GetStartedAt())
		out.FinishedAt = unixNanoOrZero(st.GetFinishedAt())
		out.ExitCode = st.GetExitCode()
		out.Reason = st.GetReason()
		out.Message = st.GetMessage()
		out.LogPath = st.GetLogPath()
		if st.GetImage().GetImage() != "" {
			out.Image = st.GetImage().GetImage()
		}
		if st.GetImageRef() != "" {
			out.ImageRef = st.GetImageRef()
		}
	}
	return out
}

func stateFromCRI(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerExited
	default:
		return ContainerUnknown
	}
}

func unixNanoOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
