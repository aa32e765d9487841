package probes

import (
	"net"
	"syscall"
)

// newDialer returns the dialer every probe and hook connection uses. Its
// sockets linger at most one second on close, so probing thousands of
// containers does not pile up sockets in TIME_WAIT, as the kubelet does.
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
