package critest

import (
	"net"
	"os"
)

// listenUnix listens on a unix socket at path, replacing a stale socket file.
func listenUnix(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return net.Listen("unix", path)
}
