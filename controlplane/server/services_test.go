package server

import (
	"errors"
	"strings"
	"testing"

	"berth/internal/errdefs"
)

func TestValidateServices(t *testing.T) {
	c := Config{}
	if err := validateServices(&c); err != nil || c.ServiceClusterIPRange != "10.43.0.0/16" || c.ServiceNodePortRange != "30000-32767" {
		t.Fatalf("defaults: %v %+v", err, c)
	}
	for flag, cfg := range map[string]Config{
		"--service-cluster-ip-range": {ServiceClusterIPRange: "10.0.0.0/8"},
		"--service-node-port-range":  {ServiceNodePortRange: "40000-30000"},
	} {
		err := validateServices(&cfg)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v", flag, err)
		}
	}
}

func TestPublicIP(t *testing.T) {
	ip, err := publicIP(Config{AdvertiseAddress: "192.0.2.10", Listen: "127.0.0.1:6443"})
	if err != nil || ip.String() != "192.0.2.10" {
		t.Fatalf("advertise address: %v %v", ip, err)
	}
	ip, err = publicIP(Config{Listen: "192.0.2.11:6443"})
	if err != nil || ip.String() != "192.0.2.11" {
		t.Fatalf("listen address: %v %v", ip, err)
	}
	// Loopback: the host's default-route address, never loopback.
	if ip, err := publicIP(Config{Listen: "127.0.0.1:0"}); err == nil && ip.IsLoopback() {
		t.Fatalf("loopback published: %v", ip)
	}
	hosts := serviceCertHosts(Config{ServiceClusterIPRange: "10.96.0.0/12", AdvertiseAddress: "192.0.2.10"})
	if strings.Join(hosts, ",") != "kubernetes.default.svc.cluster.local,10.96.0.1,192.0.2.10" {
		t.Fatalf("cert hosts %v", hosts)
	}
}
