// Package lifecycle decides what to do with a pod: given its spec, what the
// runtime shows for it, the containers' restart back-off and the time, Plan
// returns the actions that move the runtime towards the spec — as the
// kubelet's computePodActions does. It does no I/O; the pod worker
// (agent/podworker) executes the plan.
package lifecycle

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent/backoff"
	"berth/agent/podstate"
	"berth/cri"
	"berth/probes"
)

// Reasons for a container that is not started although it should run.
const (
	// ReasonCrashLoopBackOff: the container exited and waits out its back-off.
	ReasonCrashLoopBackOff = "CrashLoopBackOff"
)

// BackOff is the read side of the restart back-off (*backoff.Tracker).
type BackOff interface {
	// Until is when the restart of the container with key that exited at
	// finishedAt is allowed; false when it is allowed at once.
	Until(key string, finishedAt time.Time) (time.Time, bool)
}

// Input is everything Plan looks at.
type Input struct {
	// Pod is the desired pod (not terminating: termination is the worker's
	// own path).
	Pod *v1.Pod
	// Runtime is what the runtime holds for the pod, newest first; nil when
	// it holds nothing.
	Runtime *podstate.Pod
	// BackOff is the containers' restart back-off; nil means none.
	BackOff BackOff
	// Now is the time of the decision.
	Now time.Time
	// Unhealthy reports whether the running container with runtime ID id
	// failed its liveness or startup probe, and which; nil means no
	// probe ever failed.
	Unhealthy func(id string) (probes.ProbeType, bool)
	// StartTime is the pod's status.startTime, from which its
	// activeDeadlineSeconds counts; zero when it has not started.
	StartTime time.Time
}

// Start is a container to create and start.
type Start struct {
	// Container is the spec, pointing into the input pod.
	Container *v1.Container
	// Init marks an init container.
	Init bool
	// Ephemeral marks an ephemeral container (kubectl debug): never
	// restarted, no probes, hooks or ports.
	Ephemeral bool
	// TargetID is the runtime ID of the container whose process namespace
	// an ephemeral container joins (its targetContainerName); empty: none.
	TargetID string
	// TargetMissing names a targetContainerName the runtime holds no
	// container for: the start fails with upstream's error.
	TargetMissing string
	// RestartCount is the restart count the new container carries: one more
	// than its newest predecessor's, 0 for the first.
	RestartCount int
	// BackOffKey and BackOffSince identify the exit this start restarts
	// after; the executor records them (backoff.Tracker.Next) when it starts
	// the container. BackOffSince is zero for a first start.
	BackOffKey   string
	BackOffSince time.Time
}

// Kill is a container to stop.
type Kill struct {
	ID   string
	Name string
	// Reason says why, for logs.
	Reason string
	// Message is the Killing event's message, upstream's for the cause
	// (definition changed, failed liveness or startup probe, unknown
	// state); empty when upstream records its default, "Stopping container
	// NAME".
	Message string
	// GracePeriod overrides the pod's grace period when not zero (a failed
	// probe's terminationGracePeriodSeconds, as probes.KillGracePeriod).
	GracePeriod time.Duration
}

// Wait is a container that should run but is held back.
type Wait struct {
	// Reason is the status's waiting reason (CrashLoopBackOff).
	Reason string
	// Message is upstream's message for it.
	Message string
	// Until is when the worker should look again.
	Until time.Time
}

// Plan is the set of actions for one sync of a pod. The executor applies it
// in this order: kill the pod (every container, then the sandbox) when
// KillPod; kill ContainersToKill; create the sandbox when CreateSandbox; start
// EphemeralToStart; start InitToStart; start ContainersToStart in order.
type Plan struct {
	// KillPod: stop every container of the pod and its sandboxes.
	KillPod bool
	// CreateSandbox: run a new sandbox (with Attempt) for the containers.
	CreateSandbox bool
	// SandboxID is the existing sandbox containers go into when
	// CreateSandbox is false.
	SandboxID string
	// Attempt is the attempt number of the sandbox to create.
	Attempt uint32
	// EphemeralToStart are the ephemeral containers never started yet, in
	// spec order: they start in the running sandbox whatever the init
	// containers' progress, and before them, as upstream.
	EphemeralToStart []Start
	// InitToStart is the next init container to run, if any.
	InitToStart *Start
	// ContainersToStart are the app containers to start, in spec order.
	ContainersToStart []Start
	// ContainersToKill are single containers to stop (spec changed, unknown
	// state, not in the spec, superseded).
	ContainersToKill []Kill
	// Waiting are containers held back by their restart back-off, by name.
	Waiting map[string]Wait
	// RetryAt is when the worker must look again without news: the
	// earliest time a held-back container may start, or the pod's active
	// deadline; zero when nothing waits.
	RetryAt time.Time
	// DeadlineExceeded: the pod ran past its activeDeadlineSeconds. The
	// plan kills the pod, and the pod is Failed (ReasonDeadlineExceeded).
	DeadlineExceeded bool
}

// Empty reports a plan with nothing to do.
func (p *Plan) Empty() bool {
	return !p.KillPod && !p.CreateSandbox && p.InitToStart == nil && len(p.ContainersToStart) == 0 &&
		len(p.ContainersToKill) == 0 && len(p.EphemeralToStart) == 0
}

// Compute plans one sync of in.Pod.
func Compute(in Input) Plan {
	pod, rt := in.Pod, in.Runtime
	if rt == nil {
		rt = &podstate.Pod{UID: pod.UID}
	}
	deadline, hasDeadline := ActiveDeadline(pod, in.StartTime)
	if hasDeadline && !in.Now.Before(deadline) {
		// As the kubelet's activeDeadlineHandler: the pod is evicted, every
		// container stopped, none started again.
		return Plan{KillPod: true, DeadlineExceeded: true}
	}
	plan := compute(in, pod, rt)
	if hasDeadline && (plan.RetryAt.IsZero() || deadline.Before(plan.RetryAt)) {
		plan.RetryAt = deadline
	}
	return plan
}

// Reason and message of a pod that ran past its activeDeadlineSeconds, as
// upstream's (its status and its Normal event).
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// ActiveDeadline is when pod, started at start, has been active for its
// activeDeadlineSeconds; false when it has none or has not started.
func ActiveDeadline(pod *v1.Pod, start time.Time) (time.Time, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || start.IsZero() {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second), true
}

func compute(in Input, pod *v1.Pod, rt *podstate.Pod) Plan {
	create, attempt, sandboxID := SandboxChanged(pod, rt)
	plan := Plan{KillPod: create, CreateSandbox: create, Attempt: attempt, SandboxID: sandboxID}
	if !create {
		plan.ContainersToKill = strayContainers(pod, rt)
	}
	p := planner{in: in, rt: rt, plan: &plan}
	if create {
		p.planNewSandbox()
	} else {
		p.planExistingSandbox()
		if !plan.KillPod {
			p.planEphemeral()
		}
	}
	p.applyBackOff()
	return plan
}

type planner struct {
	in   Input
	rt   *podstate.Pod
	plan *Plan
}

// planNewSandbox plans a pod whose sandbox must be (re)created: the whole pod
// starts again, unless the restart policy says it is done.
func (p *planner) planNewSandbox() {
	pod, rt := p.in.Pod, p.rt
	if !restartOnFailure(pod) && p.plan.Attempt != 0 && len(rt.Containers) != 0 {
		// The pod ran before and must not run again: only stop what is left.
		p.plan.CreateSandbox = false
		return
	}
	var starts []int
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && succeeded(rt.Latest(c.Name)) {
			continue
		}
		starts = append(starts, i)
	}
	if len(starts) == 0 {
		if _, _, done := NextInitContainer(pod, rt); done {
			p.plan.CreateSandbox = false
			return
		}
	}
	if len(pod.Spec.InitContainers) != 0 {
		p.plan.InitToStart = p.start(&pod.Spec.InitContainers[0], true)
		return
	}
	for _, i := range starts {
		p.plan.ContainersToStart = append(p.plan.ContainersToStart, *p.start(&pod.Spec.Containers[i], false))
	}
}

// planExistingSandbox plans a pod whose sandbox is fine: init containers one
// by one, then the app containers per restart policy and spec changes.
func (p *planner) planExistingSandbox() {
	pod, rt := p.in.Pod, p.rt
	last, next, done := NextInitContainer(pod, rt)
	if !done {
		if next != nil {
			if last != nil && initFailed(last) && !restartOnFailure(pod) {
				p.plan.KillPod = true
				return
			}
			if last != nil && last.State == podstate.ContainerUnknown {
				p.kill(last, "unknown state", fmt.Sprintf("Init container is in %q state, try killing it before restart", unknownState))
			}
			p.plan.InitToStart = p.start(next, true)
		}
		return
	}
	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st := rt.Latest(c.Name)
		if st == nil || st.State != podstate.ContainerRunning {
			if ShouldRestart(c, pod, rt) {
				p.plan.ContainersToStart = append(p.plan.ContainersToStart, *p.start(c, false))
				if st != nil && st.State == podstate.ContainerUnknown {
					p.kill(st, "unknown state", fmt.Sprintf("Container is in %q state, try killing it before restart", unknownState))
				}
			}
			continue
		}
		if st.Hash != cri.ContainerHash(c) {
			// As upstream, a changed definition restarts the container
			// whatever the restart policy.
			p.kill(st, "definition changed", fmt.Sprintf("Container %s definition changed, will be restarted", c.Name))
			p.plan.ContainersToStart = append(p.plan.ContainersToStart, *p.start(c, false))
			continue
		}
		if p.in.Unhealthy != nil {
			if t, failed := p.in.Unhealthy(st.ID); failed {
				p.killUnhealthy(c, st, t)
				continue
			}
		}
		keep++
	}
	if keep == 0 && len(p.plan.ContainersToStart) == 0 {
		p.plan.KillPod = true
	}
}

// planEphemeral plans the start of every ephemeral container the runtime
// holds no container for; one that ran once is never started again. A new
// sandbox gets none: they were added to the pod that ran in the old one.
func (p *planner) planEphemeral() {
	pod := p.in.Pod
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if p.rt.Latest(ec.Name) != nil {
			continue
		}
		s := Start{Container: (*v1.Container)(&ec.EphemeralContainerCommon), Ephemeral: true}
		if t := ec.TargetContainerName; t != "" {
			if target := p.rt.Latest(t); target != nil {
				s.TargetID = target.ID
			} else {
				s.TargetMissing = t
			}
		}
		p.plan.EphemeralToStart = append(p.plan.EphemeralToStart, s)
	}
}

// start describes the start of c: its restart count and the back-off
// identity of the exit it restarts after.
func (p *planner) start(c *v1.Container, init bool) *Start {
	s := &Start{Container: c, Init: init, BackOffKey: backoff.Key(string(p.in.Pod.UID), c.Name, cri.ContainerHash(c))}
	if last := p.rt.Latest(c.Name); last != nil {
		s.RestartCount = last.RestartCount + 1
		if last.State == podstate.ContainerExited {
			s.BackOffSince = last.FinishedAt
		}
	}
	return s
}

// killUnhealthy plans the kill of running container st whose liveness or
// startup probe (t) failed, with the probe's grace period, and its restart
// when the restart policy allows one (as the kubelet: Never does not, Always
// and OnFailure do, whatever the exit code). The restart waits out the
// back-off of the container's previous exit, if any.
func (p *planner) killUnhealthy(c *v1.Container, st *podstate.Container, t probes.ProbeType) {
	pod := p.in.Pod
	name := "liveness"
	if t == probes.Startup {
		name = "startup"
	}
	msg := fmt.Sprintf("Container %s failed %s probe", c.Name, name)
	restart := restartOnFailure(pod)
	if restart {
		msg += ", will be restarted"
	}
	p.plan.ContainersToKill = append(p.plan.ContainersToKill, Kill{
		ID: st.ID, Name: c.Name, Reason: name + " probe failed", Message: msg,
		GracePeriod: time.Duration(probes.KillGracePeriod(pod, c, t)) * time.Second,
	})
	if !restart {
		return
	}
	s := p.start(c, false)
	if prev := p.rt.Previous(c.Name); prev != nil && prev.State == podstate.ContainerExited {
		s.BackOffSince = prev.FinishedAt
	}
	p.plan.ContainersToStart = append(p.plan.ContainersToStart, *s)
}

// unknownState is how upstream names the unknown container state in its
// Killing messages.
const unknownState = "unknown"

// kill plans the stop of c, for reason (logs), with message as its Killing
// event's.
func (p *planner) kill(c *podstate.Container, reason, message string) {
	p.plan.ContainersToKill = append(p.plan.ContainersToKill, Kill{ID: c.ID, Name: c.Name, Reason: reason, Message: message})
}

// applyBackOff holds back the starts whose container is still in its restart
// back-off, as the kubelet's doBackOff does at start time.
func (p *planner) applyBackOff() {
	if p.in.BackOff == nil {
		return
	}
	held := func(s *Start) bool {
		if s.BackOffSince.IsZero() {
			return false
		}
		until, ok := p.in.BackOff.Until(s.BackOffKey, s.BackOffSince)
		if !ok || !p.in.Now.Before(until) {
			return false
		}
		if p.plan.Waiting == nil {
			p.plan.Waiting = make(map[string]Wait)
		}
		p.plan.Waiting[s.Container.Name] = Wait{
			Reason: ReasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				until.Sub(s.BackOffSince), s.Container.Name, p.in.Pod.Name, p.in.Pod.Namespace, p.in.Pod.UID),
			Until: until,
		}
		if p.plan.RetryAt.IsZero() || until.Before(p.plan.RetryAt) {
			p.plan.RetryAt = until
		}
		return true
	}
	if p.plan.InitToStart != nil && held(p.plan.InitToStart) {
		p.plan.InitToStart = nil
	}
	kept := p.plan.ContainersToStart[:0]
	for i := range p.plan.ContainersToStart {
		if !held(&p.plan.ContainersToStart[i]) {
			kept = append(kept, p.plan.ContainersToStart[i])
		}
	}
	p.plan.ContainersToStart = kept
	if len(p.plan.ContainersToStart) == 0 {
		p.plan.ContainersToStart = nil
	}
}

// SandboxChanged reports whether the pod needs a new sandbox — none exists,
// more than one is ready, the newest is not ready, its network namespace mode
// differs from the spec's, or it has no IP though it is not host-network —
// with the attempt number for the new one and the current sandbox's ID.
func SandboxChanged(pod *v1.Pod, rt *podstate.Pod) (create bool, attempt uint32, sandboxID string) {
	latest := rt.LatestSandbox()
	if latest == nil {
		return true, 0, ""
	}
	ready := 0
	for _, s := range rt.Sandboxes {
		if s.Ready {
			ready++
		}
	}
	switch {
	case ready > 1, !latest.Ready,
		latest.HostNetwork != pod.Spec.HostNetwork,
		!pod.Spec.HostNetwork && len(latest.IPs) == 0:
		return true, latest.Attempt + 1, latest.ID
	}
	return false, latest.Attempt, latest.ID
}

// NextInitContainer finds the init container to run next: last is the
// status of the newest failed one (to restart), next the container to run,
// done reports that initialization is complete.
func NextInitContainer(pod *v1.Pod, rt *podstate.Pod) (last *podstate.Container, next *v1.Container, done bool) {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return nil, nil, true
	}
	for i := range pod.Spec.Containers {
		if st := rt.Latest(pod.Spec.Containers[i].Name); st != nil && st.State == podstate.ContainerRunning {
			return nil, nil, true // app containers run: initialization happened before
		}
	}
	for i := len(inits) - 1; i >= 0; i-- {
		if st := rt.Latest(inits[i].Name); st != nil && initFailed(st) {
			return st, &inits[i], false
		}
	}
	for i := len(inits) - 1; i >= 0; i-- {
		st := rt.Latest(inits[i].Name)
		if st == nil {
			continue
		}
		switch st.State {
		case podstate.ContainerRunning:
			return nil, nil, false
		case podstate.ContainerExited:
			if i == len(inits)-1 {
				return nil, nil, true
			}
			return nil, &inits[i+1], false
		}
	}
	return nil, &inits[0], false
}

// ShouldRestart reports whether app container c, not running, must be
// (re)started under the pod's restart policy.
func ShouldRestart(c *v1.Container, pod *v1.Pod, rt *podstate.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	st := rt.Latest(c.Name)
	switch {
	case st == nil:
		return true
	case st.State == podstate.ContainerRunning:
		return false
	case st.State == podstate.ContainerUnknown, st.State == podstate.ContainerCreated:
		return true
	case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
		return false
	case pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure:
		return st.ExitCode != 0
	}
	return true
}

// strayContainers are running containers the spec does not account for: not
// named in it, or older instances of a name whose newest is a different one.
func strayContainers(pod *v1.Pod, rt *podstate.Pod) []Kill {
	known := make(map[string]bool, len(pod.Spec.InitContainers)+len(pod.Spec.Containers)+len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.InitContainers {
		known[pod.Spec.InitContainers[i].Name] = true
	}
	for i := range pod.Spec.EphemeralContainers {
		known[pod.Spec.EphemeralContainers[i].Name] = true
	}
	for i := range pod.Spec.Containers {
		known[pod.Spec.Containers[i].Name] = true
	}
	var kills []Kill
	seen := make(map[string]bool)
	for _, c := range rt.Containers {
		newest := !seen[c.Name]
		seen[c.Name] = true
		if c.State != podstate.ContainerRunning {
			continue
		}
		switch {
		case !known[c.Name]:
			kills = append(kills, Kill{ID: c.ID, Name: c.Name, Reason: "container is not in the pod's spec"})
		case !newest:
			kills = append(kills, Kill{ID: c.ID, Name: c.Name, Reason: "a newer instance of the container exists"})
		}
	}
	return kills
}

func restartOnFailure(pod *v1.Pod) bool {
	return pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

func succeeded(c *podstate.Container) bool {
	return c != nil && c.State == podstate.ContainerExited && c.ExitCode == 0
}

func initFailed(c *podstate.Container) bool {
	switch {
	case c.Reason == "OOMKilled":
		return true
	case c.State == podstate.ContainerExited && c.ExitCode != 0:
		return true
	case c.State == podstate.ContainerUnknown:
		return true
	}
	return false
}
