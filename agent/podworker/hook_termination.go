package podworker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// terminationMessagesHook keeps the host files containers write their
// termination messages into, as the kubelet does
// (<root>/pods/<uid>/containers/<name>/<restart>): one made before each
// container is created (file), all removed with the pod.
type terminationMessagesHook struct{ root string }

var _ TeardownHook = (*terminationMessagesHook)(nil)

// file makes c's termination message file for its restartCount-th run and
// returns its path.
func (h *terminationMessagesHook) file(pod *v1.Pod, c *v1.Container, restartCount int) (string, error) {
	dir := filepath.Join(h.root, "pods", string(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("termination message file for container %q: %w", c.Name, err)
	}
	path := filepath.Join(dir, strconv.Itoa(restartCount))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
	if err != nil {
		return "", fmt.Errorf("termination message file for container %q: %w", c.Name, err)
	}
	f.Close()
	// The mode is set explicitly: the umask must not keep a non-root user
	// from writing its message.
	if err := os.Chmod(path, 0o666); err != nil {
		return "", fmt.Errorf("termination message file for container %q: %w", c.Name, err)
	}
	return path, nil
}

func (h *terminationMessagesHook) Teardown(_ context.Context, pod podRef) error {
	return os.RemoveAll(filepath.Join(h.root, "pods", string(pod.UID), "containers"))
}
