package podworker

import (
	"context"
	"os"

	v1 "k8s.io/api/core/v1"

	"berth/agent/sandboxconfig"
)

// logDirHook keeps the pod's log directory (<PodLogDir>/<ns>_<name>_<uid>,
// the kubelet's layout) the runtime writes container logs into: made
// before the sandbox, removed with the pod.
type logDirHook struct{ dir string }

var (
	_ PrepareHook  = (*logDirHook)(nil)
	_ TeardownHook = (*logDirHook)(nil)
)

func (h *logDirHook) Prepare(_ context.Context, pod *v1.Pod) error {
	return os.MkdirAll(sandboxconfig.LogDirectory(h.dir, pod.Namespace, pod.Name, pod.UID), 0o755)
}

func (h *logDirHook) Teardown(_ context.Context, pod podRef) error {
	if pod.Name == "" {
		return nil // an orphan without labels: no directory known
	}
	return os.RemoveAll(sandboxconfig.LogDirectory(h.dir, pod.Namespace, pod.Name, pod.UID))
}
