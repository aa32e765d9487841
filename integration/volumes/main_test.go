// Package volumes_test checks the agent's volumes from inside containers:
// one `berth server` and one `berth agent --server` on the package's
// containerd (nodeenv), shared by every test of the package, pods and the
// objects they project created through the API, and what a container sees
// read back with kubectl exec. See helpers_test.go for the helpers; the
// package's last test (TestNothingLeftMounted) checks that the deleted
// pods left nothing mounted and stops the shared processes.
package volumes_test

import (
	"testing"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { harness.Main(m, nodeenv.Options{SkipCNIConfig: true}) }
