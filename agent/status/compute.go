// Package status computes a pod's v1.PodStatus as the kubelet does — phase,
// conditions, container statuses — from its spec and what the runtime shows
// (Compute, pure), and keeps the latest status of every pod (Manager, the one
// writer of pod status).
package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/agent/lifecycle"
	"berth/agent/podstate"
)

// Waiting reasons, as upstream writes them.
const (
	ReasonContainerCreating = "ContainerCreating"
	ReasonPodInitializing   = "PodInitializing"
)

// Condition reasons, as upstream writes them.
const (
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonPodCompleted             = "PodCompleted"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// Failure is why the last attempt to start a container did not succeed
// (upstream's reason cache): CrashLoopBackOff, ErrImagePull,
// ImagePullBackOff, CreateContainerConfigError, RunContainerError, …
type Failure struct {
	Reason  string
	Message string
}

// Input is what Compute looks at.
type Input struct {
	Pod     *v1.Pod
	Runtime *podstate.Pod
	// Old is the previous status (for startTime, lastTransitionTime and a
	// terminal phase, which never changes); nil the first time.
	Old *v1.PodStatus
	// Failures are the start failures of the pod's containers, by name.
	Failures map[string]Failure
	// RuntimeName prefixes container IDs ("containerd://…").
	RuntimeName string
	// HostIP is the node's address.
	HostIP string
	// QOSClass is the pod's QoS class.
	QOSClass v1.PodQOSClass
	Now      time.Time
	// Rejected, when set, is why the agent ended the pod itself (upstream's
	// evictions and admission rejections: DeadlineExceeded,
	// SysctlForbidden, …): the pod is Failed with this reason and message.
	Rejected *Failure
	// Terminal says the agent has stopped the pod for good (deleted in the
	// apiserver): its containers will not run again whatever the restart
	// policy, so the phase is terminal — Succeeded when every container
	// ended in success, else Failed — as the kubelet's for a terminated pod.
	Terminal bool
	// Conditions are pod conditions the agent sets for its own reasons
	// (the eviction manager's DisruptionTarget), added to the ones it
	// computes; their lastTransitionTime is kept from Old while their
	// status is unchanged.
	Conditions []v1.PodCondition
}

// Compute returns the pod's status, each container started and ready while
// it runs: Finish(Observe(in)). A prober that decides started and ready
// (probes.Manager.UpdatePodStatus) goes between the two instead.
func Compute(in Input) v1.PodStatus {
	return Finish(in, Observe(in))
}

// Observe returns the pod's status without its conditions: phase, start
// time, IPs and container statuses, each container started and ready while
// it runs. It is pure; a prober may then decide started and ready (as
// probes.Manager.UpdatePodStatus) before Finish.
func Observe(in Input) v1.PodStatus {
	pod, rt := in.Pod, in.Runtime
	if rt == nil {
		rt = &podstate.Pod{UID: pod.UID}
	}
	now := metav1.NewTime(in.Now)
	st := v1.PodStatus{QOSClass: in.QOSClass}
	switch {
	case in.Old != nil && in.Old.StartTime != nil:
		st.StartTime = in.Old.StartTime.DeepCopy()
	case pod.Status.StartTime != nil:
		// As the kubelet's status manager: the apiserver's, after a restart.
		st.StartTime = pod.Status.StartTime.DeepCopy()
	default:
		st.StartTime = &now
	}
	if in.HostIP != "" {
		st.HostIP = in.HostIP
		st.HostIPs = []v1.HostIP{{IP: in.HostIP}}
	}
	if sb := rt.LatestSandbox(); sb != nil {
		ips := sb.IPs
		if pod.Spec.HostNetwork && in.HostIP != "" {
			ips = []string{in.HostIP}
		}
		if len(ips) > 0 {
			st.PodIP = ips[0]
			for _, ip := range ips {
				st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip})
			}
		}
	}
	hasInit := len(pod.Spec.InitContainers) > 0
	st.InitContainerStatuses = containerStatuses(in, rt, pod.Spec.InitContainers, hasInit, initContainer)
	st.ContainerStatuses = containerStatuses(in, rt, pod.Spec.Containers, hasInit, appContainer)
	slices.SortFunc(st.ContainerStatuses, func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
	st.EphemeralContainerStatuses = containerStatuses(in, rt, ephemeralSpecs(pod), hasInit, ephemeralContainer)
	slices.SortFunc(st.EphemeralContainerStatuses, func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })

	st.Phase = Phase(pod, st.InitContainerStatuses, st.ContainerStatuses)
	switch {
	case in.Old != nil && (in.Old.Phase == v1.PodSucceeded || in.Old.Phase == v1.PodFailed):
		// Terminal phases are final, with their reason.
		st.Phase, st.Reason, st.Message = in.Old.Phase, in.Old.Reason, in.Old.Message
	case in.Rejected != nil:
		st.Phase, st.Reason, st.Message = v1.PodFailed, in.Rejected.Reason, in.Rejected.Message
	case in.Terminal:
		st.Phase = terminalPhase(st.ContainerStatuses)
	}
	return st
}

// terminalPhase is the phase of a pod stopped for good: Succeeded when
// every container terminated with exit code 0, else Failed (upstream's
// getPhase with podIsTerminal, then the status manager's TerminatePod).
func terminalPhase(apps []v1.ContainerStatus) v1.PodPhase {
	if len(apps) == 0 {
		return v1.PodFailed
	}
	for _, cs := range apps {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			return v1.PodFailed
		}
	}
	return v1.PodSucceeded
}

// Finish returns st with the conditions that follow from it and the
// observed generation. It is pure.
func Finish(in Input, st v1.PodStatus) v1.PodStatus {
	pod, rt := in.Pod, in.Runtime
	if rt == nil {
		rt = &podstate.Pod{UID: pod.UID}
	}
	st.Conditions = conditions(in, rt, &st)
	for _, c := range in.Conditions {
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.NewTime(in.Now)
		}
		if in.Old != nil {
			for _, old := range in.Old.Conditions {
				if old.Type == c.Type && old.Status == c.Status {
					c.LastTransitionTime = old.LastTransitionTime
				}
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	// As upstream (PodObservedGenerationTracking, on since 1.34): the
	// status and the agent's conditions say which spec they reflect.
	st.ObservedGeneration = pod.Generation
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = pod.Generation
	}
	return st
}

// kind is which list of the spec a container is in.
type kind int

const (
	appContainer kind = iota
	initContainer
	ephemeralContainer
)

// ephemeralSpecs are the pod's ephemeral containers as containers.
func ephemeralSpecs(pod *v1.Pod) []v1.Container {
	var out []v1.Container
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

// containerStatuses converts the runtime's containers of one list of the
// spec, as upstream's convertToAPIContainerStatuses. Ephemeral containers
// are never ready and have no started flag (no probes), as upstream.
func containerStatuses(in Input, rt *podstate.Pod, specs []v1.Container, hasInit bool, k kind) []v1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	defaultWaiting := ReasonContainerCreating
	if hasInit {
		defaultWaiting = ReasonPodInitializing
	}
	out := make([]v1.ContainerStatus, 0, len(specs))
	for i := range specs {
		c := &specs[i]
		cs := v1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultWaiting}}}
		if latest := rt.Latest(c.Name); latest != nil {
			cs.State = state(latest)
			cs.ContainerID = containerID(in.RuntimeName, latest.ID)
			cs.ImageID = latest.ImageRef
			cs.RestartCount = int32(latest.RestartCount)
			if k != ephemeralContainer {
				cs.Ready = latest.State == podstate.ContainerRunning && k == appContainer
				started := latest.State == podstate.ContainerRunning
				cs.Started = &started
			}
			if prev := rt.Previous(c.Name); prev != nil && prev.State == podstate.ContainerExited {
				cs.LastTerminationState = state(prev)
			}
		}
		// A container that will be started again shows why it is not yet.
		restartable := lifecycle.ShouldRestart(c, in.Pod, rt)
		latest := rt.Latest(c.Name)
		switch {
		case k == initContainer && latest != nil && latest.State == podstate.ContainerExited && latest.ExitCode == 0:
			restartable = false // a completed init container never runs again
		case k == ephemeralContainer:
			restartable = latest == nil // started once at most
		}
		if f, ok := in.Failures[c.Name]; ok && restartable {
			if cs.State.Terminated != nil {
				cs.LastTerminationState = cs.State
			}
			cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: f.Reason, Message: f.Message}}
		}
		out = append(out, cs)
	}
	return out
}

func state(c *podstate.Container) v1.ContainerState {
	switch c.State {
	case podstate.ContainerRunning:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(c.StartedAt)}}
	case podstate.ContainerExited:
		reason := c.Reason
		if reason == "" {
			reason = "Error"
			if c.ExitCode == 0 {
				reason = "Completed"
			}
		}
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode:    c.ExitCode,
			Reason:      reason,
			Message:     c.Message,
			StartedAt:   timeOrZero(c.StartedAt),
			FinishedAt:  timeOrZero(c.FinishedAt),
			ContainerID: c.ID,
		}}
	case podstate.ContainerCreated:
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonContainerCreating}}
	default:
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
	}
}

func timeOrZero(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t)
}

func containerID(runtime, id string) string {
	if runtime == "" {
		runtime = "containerd"
	}
	return runtime + "://" + id
}

// Phase is upstream's pod phase rule over the container statuses.
func Phase(pod *v1.Pod, inits, apps []v1.ContainerStatus) v1.PodPhase {
	pendingInit, failedInit := 0, 0
	for _, c := range pod.Spec.InitContainers {
		cs, ok := find(inits, c.Name)
		switch {
		case !ok:
			pendingInit++
		case cs.State.Running != nil:
			pendingInit++
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			failedInit++
		case cs.State.Terminated != nil:
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			if cs.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
	for _, c := range pod.Spec.Containers {
		cs, ok := find(apps, c.Name)
		switch {
		case !ok:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 && running+stopped == 0, waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		switch {
		case pod.Spec.RestartPolicy == v1.RestartPolicyAlways:
			return v1.PodRunning
		case stopped == succeeded:
			return v1.PodSucceeded
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		}
		return v1.PodRunning
	}
	return v1.PodPending
}

func find(list []v1.ContainerStatus, name string) (*v1.ContainerStatus, bool) {
	for i := range list {
		if list[i].Name == name {
			return &list[i], true
		}
	}
	return nil, false
}

// conditions are upstream's four pod conditions (Ready also waiting for the
// readiness gates), each keeping its previous
// lastTransitionTime while its status is unchanged.
func conditions(in Input, rt *podstate.Pod, st *v1.PodStatus) []v1.PodCondition {
	pod := in.Pod
	sandboxOK := false
	if create, _, _ := lifecycle.SandboxChanged(pod, rt); !create {
		sandboxOK = true
	}
	var conds []v1.PodCondition
	conds = append(conds, cond(v1.PodReadyToStartContainers, sandboxOK, "", ""))

	// Initialized.
	var incomplete []string
	for _, c := range pod.Spec.InitContainers {
		cs, ok := find(st.InitContainerStatuses, c.Name)
		if !ok || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			incomplete = append(incomplete, c.Name)
		}
	}
	appStarted := false
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			appStarted = true
		}
	}
	switch {
	case st.Phase == v1.PodSucceeded:
		conds = append(conds, cond(v1.PodInitialized, true, ReasonPodCompleted, ""))
	case len(incomplete) == 0 || appStarted:
		conds = append(conds, cond(v1.PodInitialized, true, "", ""))
	default:
		conds = append(conds, cond(v1.PodInitialized, false, ReasonContainersNotInitialized,
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " "))))
	}

	// Ready and ContainersReady.
	var unready []string
	for _, c := range pod.Spec.Containers {
		if cs, ok := find(st.ContainerStatuses, c.Name); !ok || !cs.Ready {
			unready = append(unready, c.Name)
		}
	}
	var ready v1.PodCondition
	switch {
	case st.Phase == v1.PodSucceeded:
		ready = cond("", false, ReasonPodCompleted, "")
	case len(unready) > 0:
		ready = cond("", false, ReasonContainersNotReady, fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
	default:
		ready = cond("", true, "", "")
	}
	r, cr := ready, ready
	r.Type, cr.Type = v1.PodReady, v1.ContainersReady
	if ready.Status == v1.ConditionTrue {
		if msg := readinessGates(pod); msg != "" {
			r = cond(v1.PodReady, false, ReasonReadinessGatesNotReady, msg)
		}
	}
	conds = append(conds, r, cr)

	now := metav1.NewTime(in.Now)
	for i := range conds {
		conds[i].LastTransitionTime = now
		if in.Old == nil {
			continue
		}
		for _, old := range in.Old.Conditions {
			if old.Type == conds[i].Type && old.Status == conds[i].Status {
				conds[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	return conds
}

// readinessGates says why the pod's readiness gates keep it from Ready,
// from the conditions others set on it (upstream's message); "" when every
// gate's condition is True.
func readinessGates(pod *v1.Pod) string {
	var why []string
	for _, g := range pod.Spec.ReadinessGates {
		var c *v1.PodCondition
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == g.ConditionType {
				c = &pod.Status.Conditions[i]
				break
			}
		}
		switch {
		case c == nil:
			why = append(why, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case c.Status != v1.ConditionTrue:
			why = append(why, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), c.Status))
		}
	}
	return strings.Join(why, ", ")
}

func cond(t v1.PodConditionType, ok bool, reason, message string) v1.PodCondition {
	s := v1.ConditionFalse
	if ok {
		s = v1.ConditionTrue
	}
	return v1.PodCondition{Type: t, Status: s, Reason: reason, Message: message}
}
