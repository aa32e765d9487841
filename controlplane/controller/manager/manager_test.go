package manager

import (
	"errors"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/controlplane/controller/nodeipam"
	"berth/controlplane/controller/replicaset"
	"berth/controlplane/controller/rootcacertpublisher"
	"berth/internal/errdefs"
)

func TestConfigValidate(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	client := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	good := Config{Client: client, Dynamic: dyn, RootCA: []byte("ca")}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if good.LeaseNamespace != "kube-system" || good.LeaseName != DefaultLeaseName || good.Identity == "" || len(good.Controllers) != len(Controllers) || good.NodeIPAM.ClusterCIDR != nodeipam.DefaultClusterCIDR {
		t.Fatalf("defaults not filled: %+v", good)
	}
	for name, cfg := range map[string]Config{
		"no client":            {},
		"unknown controller":   {Client: client, Dynamic: dyn, Controllers: []string{"no-such-controller"}},
		"gc without dynamic":   {Client: client},
		"bad timings":          {Client: client, Dynamic: dyn, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second},
		"bad cluster CIDR":     {Client: client, Dynamic: dyn, NodeIPAM: nodeipam.Options{ClusterCIDR: "10.0.0.0/33"}},
		"negative workers":     {Client: client, Dynamic: dyn, Workers: -1},
		"publisher without CA": {Client: client, Dynamic: dyn, Controllers: []string{rootcacertpublisher.Name}},
	} {
		if err := cfg.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
	}
	// Without a CA the root CA publisher is left out of the default set.
	noCA := Config{Client: client, Dynamic: dyn}
	if err := noCA.Validate(); err != nil || slices.Contains(noCA.Controllers, rootcacertpublisher.Name) || len(noCA.Controllers) != len(Controllers)-1 {
		t.Fatalf("without RootCA: err %v, controllers %v", err, noCA.Controllers)
	}
	// Without the garbage collector no dynamic client is needed.
	only := Config{Client: client, Controllers: []string{replicaset.Name}}
	if _, err := New(only); err != nil {
		t.Fatalf("replicaset only: %v", err)
	}
}
