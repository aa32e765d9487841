// Package multinode breaks a multi-node cluster on purpose (integration/
// testbed: three nodes, each a network namespace with its own containerd
// and agent, two server replicas on a three-member etcd) and measures the
// recovery: the etcd leader lost while writes go on through both servers
// (no acknowledged write lost, the member rejoins), and a node lost — its
// agent SIGKILLed, or its network cut — whose pods the node lifecycle
// controller evicts once the Lease grace period and their tolerationSeconds
// have passed, and their Deployment replaces on the other nodes. The tests
// run one after another and leave the bed whole for the next.
package multinode

import (
	"net/netip"
	"testing"

	"berth/integration/testbed"
)

// TestMain runs the package on a test bed of its own names and addresses
// (other packages run test beds at the same time).
func TestMain(m *testing.M) {
	testbed.Main(m, testbed.Options{Prefix: "bflt", Underlay: netip.MustParsePrefix("10.254.78.0/24"),
		ClusterCIDR: "10.78.0.0/16", MaskBits: 24, ServiceCIDR: "10.178.0.0/20"})
}
