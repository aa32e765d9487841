// Package faults breaks a running node on purpose and checks that nothing is
// lost: `berth server` and `berth agent --server` as processes on a real
// containerd, with the agent SIGKILLed under 100 pods, containerd SIGKILLed
// and restarted, the apiserver and its etcd stopped for a minute, and the
// agent's root dir full. Each test measures the recovery it waits for and
// logs it; the tests run one after another, since they break the package's
// one containerd.
package faults

import (
	"testing"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { harness.Main(m, nodeenv.Options{SkipCNIConfig: true}) }
