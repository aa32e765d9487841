package manager

import (
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/controlplane/controller/nodeipam"
	"berth/controlplane/controller/replicaset"
	"berth/internal/errdefs"
)

func TestConfigValidate(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	client := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	good := Config{Client: client, Dynamic: dyn}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if good.LeaseNamespace != "kube-system" || good.LeaseName != DefaultLeaseName || good.Identity == "" || len(good.Controllers) != len(Controllers) || good.NodeIPAM.ClusterCIDR != nodeipam.DefaultClusterCIDR {
		t.Fatalf("defaults not filled: %+v", good)
	}
	for name, cfg := range map[string]Config{
		"no client":          {},
		"unknown controller": {Client: client, Dynamic: dyn, Controllers: []string{"cronjob"}},
		"gc without dynamic": {Client: client},
		"bad timings":        {Client: client, Dynamic: dyn, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second},
		"bad cluster CIDR":   {Client: client, Dynamic: dyn, NodeIPAM: nodeipam.Options{ClusterCIDR: "10.0.0.0/33"}},
		"negative workers":   {Client: client, Dynamic: dyn, Workers: -1},
	} {
		if err := cfg.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
	}
	// Without the garbage collector no dynamic client is needed.
	only := Config{Client: client, Controllers: []string{replicaset.Name}}
	if _, err := New(only); err != nil {
		t.Fatalf("replicaset only: %v", err)
	}
}
