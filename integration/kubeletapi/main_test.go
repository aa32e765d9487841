// Package kubeletapi_test drives the agent's API (berth/agent/kubeletapi)
// from outside, with client-go's own streaming clients, against a real
// containerd (one per package, started by nodeenv): exec over SPDY and over
// WebSocket (v5.channel.k8s.io, translated to SPDY toward containerd, and
// v4 passed through), attach, port-forward to busybox httpd over SPDY and
// tunnelled in WebSocket, streams ended when the server stops, and
// container logs from the files containerd writes.
package kubeletapi_test

import (
	"testing"

	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { nodeenv.Main(m, nodeenv.Options{}) }
