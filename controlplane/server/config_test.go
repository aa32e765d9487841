package server

import (
	"errors"
	"testing"
	"time"

	"berth/controlplane/controller/nodeipam"
	"berth/internal/errdefs"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{DataDir: "/tmp/x"}
	if err := ok.Validate(); err != nil || ok.Listen != DefaultListen || ok.Logger == nil || ok.Metrics == nil || ok.Gatherer == nil {
		t.Fatalf("defaults: %v %+v", err, ok)
	}
	bad := []Config{
		{},
		{DataDir: "/x", Listen: "6443"},
		{DataDir: "/x", EtcdServers: []string{"127.0.0.1:2379"}},
		{DataDir: "/x", EtcdCAFile: "/ca"},
		{DataDir: "/x", EtcdServers: []string{"https://e:2379"}, EtcdCertFile: "/c"},
		{DataDir: "/x", EtcdCompactionInterval: -1},
	}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("case %d (%+v): %v, want ErrInvalidArgument", i, c, err)
		}
	}
}

func TestConfigValidateComponents(t *testing.T) {
	ok := Config{DataDir: "/x", Disable: []string{ComponentScheduler}, Controllers: []string{"replicaset"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.Enabled(ComponentScheduler) || !ok.Enabled(ComponentControllers) {
		t.Fatalf("Enabled: scheduler %v controllers %v", ok.Enabled(ComponentScheduler), ok.Enabled(ComponentControllers))
	}
	if ok.NodeIPAM.ClusterCIDR != "10.244.0.0/16" || ok.NodeIPAM.NodeCIDRMaskSize != 24 || ok.LeaseDuration == 0 {
		t.Fatalf("defaults not filled: %+v", ok)
	}
	bad := []Config{
		{DataDir: "/x", Disable: []string{"apiserver"}},
		{DataDir: "/x", Controllers: []string{"no-such-controller"}},
		{DataDir: "/x", NodeIPAM: nodeipam.Options{ClusterCIDR: "10.0.0.0"}},
		{DataDir: "/x", LeaseDuration: time.Second, RenewDeadline: 2 * time.Second},
	}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("case %d: %v, want ErrInvalidArgument", i, err)
		}
	}
}
