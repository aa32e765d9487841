// Package serviceaccount drives service-account tokens end to end: `berth
// server` and `berth agent --server` as processes on a real containerd,
// kubectl and client-go as clients. A pod's projected token authenticates
// to the apiserver as its service account until the pod is deleted; every
// namespace gets the kube-root-ca.crt ConfigMap; NodeRestriction keeps a
// node's credential off other nodes.
package serviceaccount

import (
	"testing"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { harness.Main(m, nodeenv.Options{SkipCNIConfig: true}) }
