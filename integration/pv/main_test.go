// Package pv tests persistent volumes in the control plane from outside:
// a `berth server` process (binder, ephemeral-volume controller, scheduler
// with VolumeBinding) and a `berth csi-local --kubeconfig` process (the CSI
// driver with its provisioner) for a node "node-a", driven through the REST
// API. No agent runs: provisioning needs none, so the nodes are Node
// objects the tests create, labelled and registered on their CSINode as an
// agent would. Mounting such volumes into containers is
// integration/volumes' job.
package pv

import (
	"os"
	"testing"

	"berth/integration/harness"
)

// TestMain removes the berth binary the harness built, if it built one (no
// containerd is needed here, so nodeenv's environment is not started).
func TestMain(m *testing.M) {
	code := m.Run()
	harness.RemoveBinary()
	os.Exit(code)
}
