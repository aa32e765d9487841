package podworker

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// podDirHook removes the pod's directory, <root>/pods/<uid>, once the
// hooks before it emptied it. A directory that still holds something else
// is left, with a warning.
type podDirHook struct {
	root string
	log  *slog.Logger
}

var _ TeardownHook = (*podDirHook)(nil)

func (h *podDirHook) Teardown(_ context.Context, pod podRef) error {
	dir := filepath.Join(h.root, "pods", string(pod.UID))
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.log.Warn("the pod's directory holds unknown files; leaving it", "dir", dir, "err", err)
	}
	return nil
}
