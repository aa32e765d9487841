package podworker

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// probesHook ends the pod's probes: liveness and startup as it starts
// stopping (a container being stopped is not restarted for failing them),
// every probe worker and result once it is gone. Sync adds the pod's probes.
type probesHook struct{ probes Prober }

var (
	_ StopHook     = (*probesHook)(nil)
	_ TeardownHook = (*probesHook)(nil)
)

func (h *probesHook) Stopping(pod *v1.Pod) {
	if pod != nil {
		h.probes.StopLivenessAndStartup(pod)
	}
}

func (h *probesHook) Teardown(_ context.Context, pod podRef) error {
	h.probes.RemovePod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: pod.UID}})
	return nil
}
