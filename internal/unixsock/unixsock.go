// Package unixsock listens on a unix socket the way gRPC plugin servers do:
// the socket's directory created, a stale socket file from an earlier run
// replaced.
package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// Listen listens on a unix socket at path, creating its directory (0750)
// and removing a stale socket file first.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return lis, nil
}
