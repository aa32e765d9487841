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
func (w *worker) admit(pod *v1.Pod, rt *podstate.Pod) bool {
	if w.admitted {
		return true
	}
	if w.rejected != nil {
		return false
	}
	started := rt != nil && (len(rt.Sandboxes) > 0 || len(rt.Containers) > 0)
	if w.m.cfg.Admit == nil || started || (pod.Status.Phase != "" && pod.Status.Phase != v1.PodPending) {
		w.admitted = true
		return true
	}
	reason, message, ok := w.m.cfg.Admit(pod)
	if ok {
		w.admitted = true
		return true
	}
	w.m.cfg.Logger.Info("pod rejected", "pod", pod.Namespace+"/"+pod.Name, "reason", reason, "message", message)
	w.podEvent(pod, v1.EventTypeWarning, reason, message)
	w.rejected = &status.Failure{Reason: reason, Message: "Pod was rejected: " + message}
	return false
}
