// Package multinode tests berth across several nodes on one test bed
// (integration/testbed): three nodes, each a network namespace with its own
// containerd and agent, two server replicas on a three-member etcd.
package multinode

import (
	"testing"

	"berth/integration/testbed"
)

func TestMain(m *testing.M) { testbed.Main(m, testbed.Options{}) }
