package etchosts

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const localhost = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

func TestContent(t *testing.T) {
	aliases := []v1.HostAlias{
		{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}},
		{IP: "fd00::1", Hostnames: []string{"six"}},
	}
	for _, tc := range []struct {
		name             string
		ips              []string
		hostname, domain string
		aliases          []v1.HostAlias
		want             string
	}{
		{"ip and hostname", []string{"10.0.0.5"}, "web", "", nil,
			localhost + "10.0.0.5\tweb\n"},
		{"fqdn with a subdomain", []string{"10.0.0.5"}, "web", "sub.ns.svc.cluster.local", nil,
			localhost + "10.0.0.5\tweb.sub.ns.svc.cluster.local\tweb\n"},
		{"every pod IP", []string{"10.0.0.5", "fd00::5"}, "web", "", nil,
			localhost + "10.0.0.5\tweb\nfd00::5\tweb\n"},
		{"host aliases", []string{"10.0.0.5"}, "web", "", aliases,
			localhost + "10.0.0.5\tweb\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\nfd00::1\tsix\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Content(tc.ips, tc.hostname, tc.domain, tc.aliases)); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestHostNetworkContent(t *testing.T) {
	node := []byte("127.0.0.1\tlocalhost\n10.1.1.1\tnode1\n")
	got := string(HostNetworkContent(node, []v1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"a"}}}))
	want := "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n10.1.1.1\tnode1\n\n# Entries added by HostAliases.\n1.2.3.4\ta\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got := string(HostNetworkContent(node, nil)); got != "# Kubernetes-managed hosts file (host network).\n"+string(node) {
		t.Errorf("without aliases: %q", got)
	}
}

func TestShouldMount(t *testing.T) {
	plain := &v1.Container{Name: "c"}
	own := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts-original"}, {Name: "v", MountPath: "/etc/hosts"}}}
	other := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts-original"}}}
	podNet := &v1.Pod{}
	hostNet := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true}}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		c    *v1.Container
		ips  []string
		want bool
	}{
		{"pod network with an IP", podNet, plain, []string{"10.0.0.5"}, true},
		{"pod network without an IP yet", podNet, plain, nil, false},
		{"host network", hostNet, plain, nil, true},
		{"the container mounts its own /etc/hosts", podNet, own, []string{"10.0.0.5"}, false},
		{"another path under /etc", podNet, other, []string{"10.0.0.5"}, true},
		{"host network, own /etc/hosts", hostNet, own, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShouldMount(tc.pod, tc.c, tc.ips); got != tc.want {
				t.Errorf("ShouldMount = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pods", "uid")
	nodeHosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(nodeHosts, []byte("127.0.0.1\tnode-local\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{}
	m, err := File(dir, nodeHosts, pod, []string{"10.0.0.5"}, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	if m.ContainerPath != "/etc/hosts" || m.HostPath != filepath.Join(dir, "etc-hosts") || m.Readonly {
		t.Errorf("mount %+v", m)
	}
	fi, err := os.Stat(m.HostPath)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("file mode %v (%v), want 0644", fi.Mode(), err)
	}
	// A new sandbox's IP replaces the old one in the same file (inode).
	if _, err := File(dir, nodeHosts, pod, []string{"10.0.0.9"}, "web", ""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(m.HostPath)
	if want := localhost + "10.0.0.9\tweb\n"; string(b) != want {
		t.Errorf("rewritten file %q, want %q", b, want)
	}
	if fi2, _ := os.Stat(m.HostPath); !os.SameFile(fi, fi2) {
		t.Error("the file was replaced, not rewritten: running containers would keep the old one")
	}

	hostNet := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true}}
	if _, err := File(dir, nodeHosts, hostNet, nil, "web", ""); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(m.HostPath)
	if want := "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tnode-local\n"; string(b) != want {
		t.Errorf("host-network file %q, want %q", b, want)
	}
	if _, err := File(dir, filepath.Join(t.TempDir(), "missing"), hostNet, nil, "web", ""); err == nil {
		t.Error("a missing node hosts file is not an error")
	}
}
