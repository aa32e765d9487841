// Package containerconfig translates one container of a pod into the CRI
// ContainerConfig the kubelet would send with CreateContainer: metadata,
// image, command and args with $(VAR) expansion, the resolved environment,
// working directory, mounts, log path, kubelet labels and annotations, and the
// Linux part (CPU shares, CFS quota and period, memory limit, oom_score_adj,
// and the security context).
//
// Build is a pure function of (pod, container, options): whatever needs I/O —
// volumes, ConfigMap and Secret values, service variables, the pod's and
// node's IPs, the image's user — the caller resolves and passes in Options.
package containerconfig

import (
	"fmt"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/qos"
	"berth/cri"
	"berth/internal/errdefs"
	"berth/internal/expansion"
)

// Options are what Build needs beyond the pod spec, resolved by the caller.
type Options struct {
	// RestartCount is the container's restart count: 0 for its first
	// container, one more for each re-creation. It is the CRI attempt, the
	// log file's name and an annotation.
	RestartCount int
	// ImageRef is the image reference the puller returned (the runtime's image
	// ID); empty means the spec's image.
	ImageRef string
	// ImageUID and ImageUser are the image's configured user, from the
	// runtime's ImageStatus (uid when numeric, else the name); they fill
	// runAsUser when the spec sets none and feed the runAsNonRoot check.
	ImageUID  *int64
	ImageUser string

	// TargetContainerID is the runtime ID of the container an ephemeral
	// container targets (targetContainerName): unless the pod shares one
	// process namespace, it joins that container's.
	TargetContainerID string

	// Mounts are the container's volume mounts, resolved to host paths.
	Mounts []*runtimeapi.Mount
	// TerminationMessageHostPath is the host file (created by the caller)
	// mounted at the container's terminationMessagePath; empty mounts none.
	TerminationMessageHostPath string

	// EnvFrom are the variables of the container's envFrom sources, resolved
	// in order (prefix applied, invalid names dropped) by the caller.
	EnvFrom []EnvVar
	// EnvValues holds, by variable name, the values the caller resolved for
	// env entries whose valueFrom is a configMapKeyRef, secretKeyRef or
	// fileKeyRef. A missing name is an error unless the reference is optional.
	EnvValues map[string]string
	// ServiceEnv are the service link variables (FOO_SERVICE_HOST, …).
	ServiceEnv map[string]string

	// PodIPs are the pod's IPs, primary first (status.podIP(s)).
	PodIPs []string
	// HostIPs are the node's IPs, primary first (status.hostIP(s)).
	HostIPs []string
	// NodeName answers spec.nodeName when the pod's is empty.
	NodeName string
	// NodeAllocatable stands in for unset CPU, memory and ephemeral-storage
	// limits in resourceFieldRef values.
	NodeAllocatable v1.ResourceList
	// MemoryCapacity is the node's memory in bytes, for Burstable
	// containers' oom_score_adj; required when the pod is Burstable.
	MemoryCapacity int64
	// CgroupV2 says the node runs the unified cgroup hierarchy: containers
	// then get memory.oom.group=1 (the whole container is OOM-killed).
	CgroupV2 bool

	// SeccompDefault gives containers without a seccomp profile the
	// runtime's default one instead of Unconfined (--seccomp-default).
	SeccompDefault bool
	// SeccompProfileRoot is the directory Localhost seccomp profiles are
	// relative to (<root-dir>/seccomp for the kubelet).
	SeccompProfileRoot string
}

// Build returns the ContainerConfig for container c of pod, or an error
// naming the field (or option) that makes it impossible.
func Build(pod *v1.Pod, c *v1.Container, opts Options) (*runtimeapi.ContainerConfig, error) {
	path := containerPath(pod, c)
	switch {
	case c.Name == "":
		return nil, fmt.Errorf("%s.name: required: %w", path, errdefs.ErrInvalidArgument)
	case c.Image == "":
		return nil, fmt.Errorf("%s.image: required: %w", path, errdefs.ErrInvalidArgument)
	case opts.RestartCount < 0:
		return nil, fmt.Errorf("container %q: Options.RestartCount %d: must not be negative: %w", c.Name, opts.RestartCount, errdefs.ErrInvalidArgument)
	}
	class := qos.Class(pod)
	if class == v1.PodQOSBurstable && opts.MemoryCapacity <= 0 && !qos.IsNodeCritical(pod) {
		return nil, fmt.Errorf("container %q: Options.MemoryCapacity is required for a Burstable pod: %w", c.Name, errdefs.ErrInvalidArgument)
	}
	if err := VerifyRunAsNonRoot(pod, c, opts.ImageUID, opts.ImageUser); err != nil {
		return nil, err
	}
	env, err := Env(pod, c, opts)
	if err != nil {
		return nil, err
	}
	envMap := make(map[string]string, len(env))
	envs := make([]*runtimeapi.KeyValue, 0, len(env))
	for _, e := range env {
		envMap[e.Name] = e.Value
		envs = append(envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	command, args := ExpandCommandAndArgs(c, envMap)

	image := opts.ImageRef
	if image == "" {
		image = c.Image
	}
	mounts := append([]*runtimeapi.Mount(nil), opts.Mounts...)
	if opts.TerminationMessageHostPath != "" && c.TerminationMessagePath != "" {
		mounts = append(mounts, &runtimeapi.Mount{
			HostPath:      opts.TerminationMessageHostPath,
			ContainerPath: c.TerminationMessagePath,
		})
	}
	sc, err := securityContext(pod, c, opts)
	if err != nil {
		return nil, err
	}
	res := qos.ContainerResources(pod, c)
	res.OomScoreAdj = qos.OOMScoreAdj(pod, c, opts.MemoryCapacity)
	if opts.CgroupV2 {
		res.Unified = map[string]string{"memory.oom.group": "1"}
	}
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(opts.RestartCount)},
		Image:       &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		Command:     command,
		Args:        args,
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Mounts:      mounts,
		Labels:      cri.ContainerLabels(pod, c),
		Annotations: cri.ContainerAnnotations(pod, c, opts.RestartCount),
		LogPath:     LogPath(c.Name, opts.RestartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       res,
			SecurityContext: sc,
		},
	}, nil
}

// LogPath is a container's log file relative to its pod's log directory:
// <container>/<restartCount>.log.
func LogPath(containerName string, restartCount int) string {
	return filepath.Join(containerName, strconv.Itoa(restartCount)+".log")
}

// ExpandCommandAndArgs expands $(VAR) references in the container's command
// and args against its environment (see expansion.Expand).
func ExpandCommandAndArgs(c *v1.Container, env map[string]string) (command, args []string) {
	lookup := expansion.Lookup(env)
	for _, s := range c.Command {
		command = append(command, expansion.Expand(s, lookup))
	}
	for _, s := range c.Args {
		args = append(args, expansion.Expand(s, lookup))
	}
	return command, args
}
