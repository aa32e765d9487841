package critest

import (
	"fmt"
	"os"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// AppendLog writes text to a container's log file in the CRI format, as the
// runtime does with what the container prints: one full (F) record per line,
// a final line without a newline as a partial (P) record. The log file is
// <sandbox LogDirectory>/<container LogPath>; it is created if missing (its
// directory must exist, as the kubelet creates it).
func (s *Server) AppendLog(containerID string, stream runtimeapi.LogStreamType, text string) error {
	s.mu.Lock()
	c, ok := s.containers[containerID]
	var path string
	if ok {
		path = c.logPath
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("critest: AppendLog: no container %q", containerID)
	}
	if path == "" {
		return fmt.Errorf("critest: AppendLog: container %q has no log path (sandbox LogDirectory and container LogPath must be set)", containerID)
	}
	var b strings.Builder
	for text != "" {
		line, rest, full := strings.Cut(text, "\n")
		tag := runtimeapi.LogTagFull
		if !full {
			tag = runtimeapi.LogTagPartial
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, tag, line)
		text = rest
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("critest: AppendLog: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("critest: AppendLog: %w", err)
	}
	return f.Close()
}
