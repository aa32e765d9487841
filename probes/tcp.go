package probes

import (
	"context"
	"net"
	"strconv"
	"time"
)

// TCPProbe opens a TCP connection to host:port within timeout and closes it.
// Connected is Success; any error (refused, unreachable, timed out) is a
// Failure with the error as the message, as the kubelet does.
func TCPProbe(ctx context.Context, host string, port int, timeout time.Duration) (Result, string, error) {
	d := newDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close()
	return Success, "", nil
}
