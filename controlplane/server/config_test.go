package server

import (
	"errors"
	"testing"

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
