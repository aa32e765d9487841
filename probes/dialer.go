package probes

import (
	"net"
	"syscall"
)

// newDialer returns the dialer every probe and hook connection uses. Its
// sockets get SO_LINGER of one second, as the kubelet's probe dialer sets, so
// that closing thousands of short probe connections does not leave them
// lingering.
func newDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
}
