package sandboxconfig

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/dns"
	"berth/internal/errdefs"
)

func i64(v int64) *int64 { return &v }
func boolp(v bool) *bool { return &v }

func basePod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "hello"},
		},
		Spec: v1.PodSpec{
			DNSPolicy:       v1.DNSClusterFirst,
			SecurityContext: &v1.PodSecurityContext{},
			Containers:      []v1.Container{{Name: "app", Image: "busybox"}},
		},
	}
}

func writeResolv(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(p, []byte("nameserver 192.0.2.53\nsearch lan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func baseOptions(t *testing.T) Options {
	return Options{
		Attempt:    2,
		PodLogDir:  "/var/log/pods",
		CgroupRoot: "/",
		DNS: dns.Options{
			ClusterDNS:    []net.IP{net.ParseIP("10.96.0.10")},
			ClusterDomain: "cluster.local",
			ResolvConf:    writeResolv(t),
		},
	}
}

// baseWant is the full config of basePod under baseOptions; cases modify it.
func baseWant() *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "uid-1", Attempt: 2},
		Hostname:     "web",
		LogDirectory: "/var/log/pods/shop_web_uid-1",
		DnsConfig: &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "lan"},
			Options:  []string{"ndots:5"},
		},
		Labels: map[string]string{
			"app":                         "web",
			"io.kubernetes.pod.name":      "web",
			"io.kubernetes.pod.namespace": "shop",
			"io.kubernetes.pod.uid":       "uid-1",
		},
		Annotations: map[string]string{"note": "hello"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: "/kubepods/besteffort/poduid-1",
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network:       runtimeapi.NamespaceMode_POD,
					Pid:           runtimeapi.NamespaceMode_CONTAINER,
					Ipc:           runtimeapi.NamespaceMode_POD,
					UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE},
				},
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
			Sysctls:   map[string]string{},
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
			Overhead:  &runtimeapi.LinuxContainerResources{},
		},
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod, *Options)
		want   func(*runtimeapi.PodSandboxConfig)
	}{
		{"defaults", nil, nil},
		{"custom log dir and cgroup root", func(p *v1.Pod, o *Options) {
			o.PodLogDir = "/tmp/logs/"
			o.CgroupRoot = "/berth"
		}, func(w *runtimeapi.PodSandboxConfig) {
			w.LogDirectory = "/tmp/logs/shop_web_uid-1"
			w.Linux.CgroupParent = "/berth/kubepods/besteffort/poduid-1"
		}},
		{"hostname and subdomain with FQDN", func(p *v1.Pod, o *Options) {
			p.Spec.Hostname = "front"
			p.Spec.Subdomain = "web-svc"
			p.Spec.SetHostnameAsFQDN = boolp(true)
		}, func(w *runtimeapi.PodSandboxConfig) {
			w.Hostname = "front.web-svc.shop.svc.cluster.local"
		}},
		{"hostNetwork: no hostname, host DNS, node network namespace", func(p *v1.Pod, o *Options) {
			p.Spec.HostNetwork = true
			p.Spec.HostPID = true
			p.Spec.HostIPC = true
		}, func(w *runtimeapi.PodSandboxConfig) {
			w.Hostname = ""
			w.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53"}, Searches: []string{"lan"}, Options: []string{}}
			ns := w.Linux.SecurityContext.NamespaceOptions
			ns.Network, ns.Pid, ns.Ipc = runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_NODE
		}},
		{"shareProcessNamespace", func(p *v1.Pod, o *Options) {
			p.Spec.ShareProcessNamespace = boolp(true)
		}, func(w *runtimeapi.PodSandboxConfig) {
			w.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
		}},
		{"ports", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{
				{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
				{ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP, HostIP: "127.0.0.1"},
				{ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP, HostIP: "127.0.0.1"}, // duplicate, dropped
				{ContainerPort: 9000},
				{ContainerPort: 7000, HostPort: 7000, Protocol: v1.ProtocolSCTP, HostIP: "::1"},
			}
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side",
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 81, HostPort: 8081}}})
			p.Spec.InitContainers = []v1.Container{{Name: "init", Ports: []v1.ContainerPort{{ContainerPort: 1, HostPort: 1}}}}
		}, func(w *runtimeapi.PodSandboxConfig) {
			w.PortMappings = []*runtimeapi.PortMapping{
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
				{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"},
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 9000},
				{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 7000, HostPort: 7000, HostIp: "::1"},
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 81, HostPort: 8081},
			}
		}},
		{"pod security context", func(p *v1.Pod, o *Options) {
			merge := v1.SupplementalGroupsPolicyStrict
			p.Spec.SecurityContext = &v1.PodSecurityContext{
				RunAsUser:                i64(1000),
				RunAsGroup:               i64(3000),
				FSGroup:                  i64(2000),
				SupplementalGroups:       []int64{4000, 5000},
				SupplementalGroupsPolicy: &merge,
				Sysctls:                  []v1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"}, {Name: "kernel/shm_rmid_forced", Value: "1"}},
				SELinuxOptions:           &v1.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0"},
			}
		}, func(w *runtimeapi.PodSandboxConfig) {
			sc := w.Linux.SecurityContext
			sc.RunAsUser = &runtimeapi.Int64Value{Value: 1000}
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: 3000}
			sc.SupplementalGroups = []int64{2000, 4000, 5000}
			sc.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy_Strict
			sc.SelinuxOptions = &runtimeapi.SELinuxOption{User: "u", Role: "r", Type: "t", Level: "s0"}
			w.Linux.Sysctls = map[string]string{"net.ipv4.ip_local_port_range": "1024 65000", "kernel.shm_rmid_forced": "1"}
		}},
		{"nil pod security context", func(p *v1.Pod, o *Options) { p.Spec.SecurityContext = nil }, nil},
		{"privileged init container makes the sandbox privileged", func(p *v1.Pod, o *Options) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", SecurityContext: &v1.SecurityContext{Privileged: boolp(true)}}}
		}, func(w *runtimeapi.PodSandboxConfig) { w.Linux.SecurityContext.Privileged = true }},
		{"unprivileged container stays unprivileged", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: boolp(false)}
		}, nil},
		{"guaranteed pod: cgroup parent and resources", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")}
			p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("10Mi")}
		}, func(w *runtimeapi.PodSandboxConfig) {
			w.Linux.CgroupParent = "/kubepods/poduid-1"
			w.Linux.Resources = &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 64 << 20}
			w.Linux.Overhead = &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuQuota: 10000, CpuPeriod: 100000, MemoryLimitInBytes: 10 << 20}
		}},
		{"burstable pod cgroup parent", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Mi")}
		}, func(w *runtimeapi.PodSandboxConfig) {
			w.Linux.CgroupParent = "/kubepods/burstable/poduid-1"
		}},
		{"dnsPolicy None", func(p *v1.Pod, o *Options) {
			p.Spec.DNSPolicy = v1.DNSNone
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"9.9.9.9"}}
		}, func(w *runtimeapi.PodSandboxConfig) {
			w.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"9.9.9.9"}, Searches: []string{}, Options: []string{}}
		}},
		{"no labels or annotations on the pod", func(p *v1.Pod, o *Options) {
			p.Labels, p.Annotations = nil, nil
		}, func(w *runtimeapi.PodSandboxConfig) {
			delete(w.Labels, "app")
			w.Annotations = nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, opts := basePod(), baseOptions(t)
			if tt.mutate != nil {
				tt.mutate(p, &opts)
			}
			want := baseWant()
			want.Metadata.Attempt = opts.Attempt
			if tt.want != nil {
				tt.want(want)
			}
			got, err := Build(p, opts)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Fatalf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod, *Options)
		is     error
		field  string
	}{
		{"no name", func(p *v1.Pod, o *Options) { p.Name = "" }, errdefs.ErrInvalidArgument, "metadata.name"},
		{"no namespace", func(p *v1.Pod, o *Options) { p.Namespace = "" }, errdefs.ErrInvalidArgument, "metadata.namespace"},
		{"no uid", func(p *v1.Pod, o *Options) { p.UID = "" }, errdefs.ErrInvalidArgument, "metadata.uid"},
		{"no log dir", func(p *v1.Pod, o *Options) { o.PodLogDir = "" }, errdefs.ErrInvalidArgument, "Options.PodLogDir"},
		{"bad hostname", func(p *v1.Pod, o *Options) { p.Spec.Hostname = "Bad_Name" }, errdefs.ErrInvalidArgument, "spec.hostname"},
		{"bad protocol", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 1, Protocol: "ICMP"}}
		}, errdefs.ErrInvalidArgument, "spec.containers[0].ports[0].protocol"},
		{"bad hostIP", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 1, HostPort: 1, HostIP: "localhost"}}
		}, errdefs.ErrInvalidArgument, "spec.containers[0].ports[0].hostIP"},
		{"user namespaces", func(p *v1.Pod, o *Options) { p.Spec.HostUsers = boolp(false) }, errdefs.ErrUnimplemented, "spec.hostUsers"},
		{"bad dns policy", func(p *v1.Pod, o *Options) { p.Spec.DNSPolicy = "Weird" }, errdefs.ErrInvalidArgument, "spec.dnsPolicy"},
		{"bad supplemental groups policy", func(p *v1.Pod, o *Options) {
			bad := v1.SupplementalGroupsPolicy("Mix")
			p.Spec.SecurityContext.SupplementalGroupsPolicy = &bad
		}, errdefs.ErrInvalidArgument, "spec.securityContext.supplementalGroupsPolicy"},
		{"unnamed sysctl", func(p *v1.Pod, o *Options) {
			p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Value: "1"}}
		}, errdefs.ErrInvalidArgument, "spec.securityContext.sysctls[0].name"},
		{"FQDN too long", func(p *v1.Pod, o *Options) {
			p.Spec.Hostname = strings.Repeat("h", 50)
			p.Spec.Subdomain = "s"
			p.Spec.SetHostnameAsFQDN = boolp(true)
		}, errdefs.ErrInvalidArgument, "spec.setHostnameAsFQDN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, opts := basePod(), baseOptions(t)
			tt.mutate(p, &opts)
			cfg, err := Build(p, opts)
			if cfg != nil || !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Build = %v, %v; want nil and %v naming %s", cfg, err, tt.is, tt.field)
			}
		})
	}
}

func TestLogDirectory(t *testing.T) {
	if got := LogDirectory("/var/log/pods", "kube-system", "etcd-node1", "abc"); got != "/var/log/pods/kube-system_etcd-node1_abc" {
		t.Fatalf("LogDirectory = %q", got)
	}
}

func TestBuildWithWarnings(t *testing.T) {
	p, opts := basePod(), baseOptions(t)
	opts.DNS.ClusterDNS = nil
	cfg, warnings, err := BuildWithWarnings(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || warnings[0].Reason != dns.ReasonMissingClusterDNS {
		t.Fatalf("warnings = %v, want one MissingClusterDNS", warnings)
	}
	// Falls back to the host's resolver.
	if got := cfg.DnsConfig.Servers; len(got) != 1 || got[0] != "192.0.2.53" {
		t.Fatalf("servers = %v, want the host's", got)
	}
	if _, warnings, _ := BuildWithWarnings(basePod(), baseOptions(t)); len(warnings) != 0 {
		t.Fatalf("warnings with cluster DNS = %v, want none", warnings)
	}
}
