package kubeletconfig

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent"
	"berth/agent/imagegc"
	"berth/agent/node"
	"berth/internal/errdefs"
)

const full = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: 127.0.0.1
port: 11250
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 2m}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization: {mode: Webhook}
clusterDNS: [10.96.0.10]
clusterDomain: example.local
resolvConf: /run/systemd/resolve/resolv.conf
evictionHard: {memory.available: 200Mi, nodefs.available: 5%}
evictionSoft: {memory.available: 1Gi}
evictionSoftGracePeriod: {memory.available: 1m}
evictionMinimumReclaim: {memory.available: 100Mi}
evictionMaxPodGracePeriod: 30
evictionPressureTransitionPeriod: 30s
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
imageMinimumGCAge: 5m
maxPods: 50
systemReserved: {cpu: 100m, memory: 256Mi}
kubeReserved: {memory: 128Mi}
registerWithTaints: [{key: dedicated, value: infra, effect: NoSchedule}]
nodeStatusUpdateFrequency: 4s
serializeImagePulls: false
cgroupDriver: cgroupfs
podPidsLimit: 1024
shutdownGracePeriod: 30s
`

func TestApplyMapsEverySupportedField(t *testing.T) {
	f, err := Parse("kubelet.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{ImageGCPolicy: imagegc.DefaultPolicy(), ClusterDomain: "cluster.local"}
	warnings, err := f.Apply(&cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--config kubelet.yaml: authentication.webhook.cacheTTL is not supported by berth agent and is ignored",
		"--config kubelet.yaml: podPidsLimit is not supported by berth agent and is ignored",
		"--config kubelet.yaml: shutdownGracePeriod is not supported by berth agent and is ignored",
	}
	if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	mem := cfg.SystemReserved[v1.ResourceMemory]
	for name, ok := range map[string]bool{
		"staticPodPath":    cfg.PodManifestPath == "/etc/kubernetes/manifests",
		"runtime":          cfg.RuntimeEndpoint == "unix:///run/containerd/containerd.sock",
		"address/port":     cfg.KubeletAddress == "127.0.0.1" && cfg.KubeletPort == 11250,
		"clientCAFile":     cfg.ClientCAFile == "/etc/kubernetes/pki/ca.crt",
		"clusterDNS":       len(cfg.ClusterDNS) == 1 && cfg.ClusterDNS[0].String() == "10.96.0.10",
		"clusterDomain":    cfg.ClusterDomain == "example.local",
		"resolvConf":       cfg.ResolvConf == "/run/systemd/resolve/resolv.conf",
		"evictionHard":     cfg.EvictionHard.String() == "memory.available<200Mi,nodefs.available<5%",
		"evictionSoft":     cfg.EvictionSoft.String() == "memory.available<1Gi",
		"grace":            cfg.EvictionSoftGracePeriod[node.SignalMemoryAvailable] == time.Minute,
		"minimumReclaim":   cfg.EvictionMinimumReclaim.String() == "memory.available<100Mi",
		"maxPodGrace":      cfg.EvictionMaxPodGracePeriod == 30*time.Second,
		"transition":       cfg.EvictionPressureTransitionPeriod == 30*time.Second,
		"imageGC":          cfg.ImageGCPolicy == imagegc.Policy{HighThresholdPercent: 90, LowThresholdPercent: 70, MinAge: 5 * time.Minute},
		"maxPods":          cfg.MaxPods == 50,
		"systemReserved":   mem.String() == "256Mi" && len(cfg.SystemReserved) == 2,
		"kubeReserved":     len(cfg.KubeReserved) == 1,
		"taints":           len(cfg.RegisterWithTaints) == 1 && cfg.RegisterWithTaints[0].Key == "dedicated" && cfg.RegisterWithTaints[0].Effect == v1.TaintEffectNoSchedule,
		"statusUpdateFreq": cfg.NodeStatusUpdateFrequency == 4*time.Second,
	} {
		if !ok {
			t.Errorf("%s not applied: %+v", name, cfg)
		}
	}
}

// As the kubelet: a flag given on the command line wins over the file.
func TestFlagsOverrideTheFile(t *testing.T) {
	f, err := Parse("k.yaml", []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 50\nclusterDomain: file.local\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{MaxPods: 7, ClusterDomain: "default.local"}
	if _, err := f.Apply(&cfg, func(flag string) bool { return flag == "max-pods" }); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxPods != 7 || cfg.ClusterDomain != "file.local" {
		t.Errorf("maxPods %d (flag 7 given), clusterDomain %q (file's)", cfg.MaxPods, cfg.ClusterDomain)
	}
}

func TestBadFilesNameTheField(t *testing.T) {
	const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	for _, c := range []struct{ body, want string }{
		{head + "maxPod: 3\n", `unknown field "maxPod"`},
		{"apiVersion: v1\nkind: KubeletConfiguration\n", `apiVersion "v1", kind "KubeletConfiguration": want kubelet.config.k8s.io/v1beta1, KubeletConfiguration`},
		{head + "authentication: {anonymous: {enabled: true}}\n", "authentication.anonymous.enabled: true is not supported"},
		{head + "authentication: {webhook: {enabled: false}}\n", "authentication.webhook.enabled: false is not supported"},
		{head + "authorization: {mode: AlwaysAllow}\n", `authorization.mode: "AlwaysAllow" is not supported`},
		{head + "evictionHard: {memory.free: 1Gi}\n", "evictionHard: eviction threshold"},
		{head + "evictionSoft: {memory.available: 1Gi}\n", ""}, // caught by agent.New: no grace period
		{head + "systemReserved: {gpu: 1}\n", `systemReserved: cannot reserve "gpu" resource`},
		{head + "clusterDNS: [dns.local]\n", `clusterDNS: "dns.local" is not an IP address`},
		{head + "maxPods: lots\n", "maxPods"},
	} {
		f, err := Parse("k.yaml", []byte(c.body))
		if err == nil {
			cfg := agent.Config{}
			_, err = f.Apply(&cfg, nil)
		}
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%q: %v, want an invalid-argument error containing %q", c.body, err, c.want)
		}
	}
}
