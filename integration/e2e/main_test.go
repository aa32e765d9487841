// Package e2e drives the whole flow on one machine: `berth server` and
// `berth agent --server` as processes on a real containerd (nodeenv), real
// kubectl as the client: the node registers and is Ready, a pod applied
// without a node is scheduled, runs with an IP from the node's podCIDR,
// answers kubectl logs and exec through the apiserver, pulls with its pull
// secret, and leaves nothing in containerd once deleted.
package e2e

import (
	"testing"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { harness.Main(m, nodeenv.Options{SkipCNIConfig: true}) }
