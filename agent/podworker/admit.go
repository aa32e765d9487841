package podworker

import (
	v1 "k8s.io/api/core/v1"

	"berth/agent/podstate"
	"berth/agent/status"
)

// admit runs the node's admission (Config.Admit) once for a pod the worker
// has not started: nothing of it in the runtime and its phase still
// Pending. A rejected pod is never started; as the kubelet's rejectPod, it
// is Failed with the reason and "Pod was rejected: <message>", and a
// Warning event records the reason and message. It reports whether the pod
// may run.
//
// Admissions are serial across workers (as the kubelet's single admission
// loop), each given the pods admitted before it that have not finished
// (activePods), so two pods can never both take the node's last room or
// the same host port.
func (w *worker) admit(pod *v1.Pod, rt *podstate.Pod) bool {
	if w.isAdmitted() {
		return true
	}
	if w.rejected != nil {
		return false
	}
	started := rt != nil && (len(rt.Sandboxes) > 0 || len(rt.Containers) > 0)
	if w.m.cfg.Admit == nil || started || !pending(pod) {
		w.setAdmitted()
		return true
	}
	w.m.admitMu.Lock()
	reason, message, ok := w.m.cfg.Admit(pod, w.m.activePods(w))
	if ok {
		w.setAdmitted()
	}
	w.m.admitMu.Unlock()
	if ok {
		return true
	}
	w.m.cfg.Logger.Info("pod rejected", "pod", pod.Namespace+"/"+pod.Name, "reason", reason, "message", message)
	w.podEvent(pod, v1.EventTypeWarning, reason, message)
	w.rejected = &status.Failure{Reason: reason, Message: "Pod was rejected: " + message}
	return false
}

// pending reports whether the pod has not run anywhere yet (phase Pending
// or unset): only such a pod goes through admission.
func pending(pod *v1.Pod) bool {
	return pod.Status.Phase == "" || pod.Status.Phase == v1.PodPending
}

func (w *worker) isAdmitted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.admitted
}

func (w *worker) setAdmitted() {
	w.mu.Lock()
	w.admitted = true
	w.mu.Unlock()
}

// activePods are the pods other than self's that hold the node's
// resources, as the kubelet's active pods: admitted — or certain to be,
// having run already (a restarted agent's workers admit those without
// checks, in any order) — and not finished, unless still terminating.
func (m *Manager) activePods(self *worker) []*v1.Pod {
	m.mu.Lock()
	workers := make([]*worker, 0, len(m.workers))
	for _, w := range m.workers {
		if w != self {
			workers = append(workers, w)
		}
	}
	m.mu.Unlock()
	var out []*v1.Pod
	for _, w := range workers {
		w.mu.Lock()
		pod, admitted, terminating := w.pod, w.admitted, w.terminating
		w.mu.Unlock()
		if pod == nil || !(admitted || !pending(pod) && !terminal(pod.Status.Phase)) {
			continue
		}
		if st, ok := m.cfg.Status.Status(pod.UID); ok && terminal(st.Phase) && !terminating {
			continue
		}
		out = append(out, pod)
	}
	return out
}

func terminal(phase v1.PodPhase) bool { return phase == v1.PodSucceeded || phase == v1.PodFailed }
