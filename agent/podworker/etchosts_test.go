package podworker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri/critest"
)

// Each container gets the pod's managed /etc/hosts (pod IP, hostname,
// FQDN, host aliases) unless it mounts a volume there itself; the file
// goes with the pod.
func TestManagedEtcHostsIsMounted(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newConfiguredHarness(t, srv, func(c *Config) { c.SandboxOptions.DNS.ClusterDomain = "cluster.local" })
	pod := testPod("hosts", v1.RestartPolicyAlways, nil, "app", "own")
	pod.Spec.Hostname, pod.Spec.Subdomain = "web", "sub"
	pod.Spec.HostAliases = []v1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"alias"}}}
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[1].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/etc/hosts"}}
	h.m.Update(pod)
	var app, own *runtimeapi.Container
	eventually(t, "running", func() (bool, string) {
		app, own = h.running(pod.UID, "app"), h.running(pod.UID, "own")
		return app != nil && own != nil, ""
	})
	hostsMount := func(id string) string {
		resp, err := h.cri.ContainerStatus(context.Background(), id, false)
		if err != nil {
			t.Fatal(err)
		}
		var host string
		for _, m := range resp.GetStatus().GetMounts() {
			if m.GetContainerPath() == "/etc/hosts" {
				host = m.GetHostPath()
			}
		}
		return host
	}
	host := hostsMount(app.GetId())
	if want := filepath.Join(h.root, "pods", string(pod.UID), "etc-hosts"); host != want {
		t.Fatalf("/etc/hosts mounted from %q, want %q", host, want)
	}
	if other := hostsMount(own.GetId()); other == host {
		t.Errorf("a container mounting its own /etc/hosts got the managed one too")
	}
	b, err := os.ReadFile(host)
	if err != nil {
		t.Fatal(err)
	}
	sb := h.sandboxes(pod.UID)[0]
	st, err := h.cri.PodSandboxStatus(context.Background(), sb.GetId(), false)
	if err != nil {
		t.Fatal(err)
	}
	ip := st.GetStatus().GetNetwork().GetIp()
	for _, want := range []string{"# Kubernetes-managed hosts file.\n", ip + "\tweb.sub.default.svc.cluster.local\tweb\n", "# Entries added by HostAliases.\n1.2.3.4\talias\n"} {
		if ip == "" || !strings.Contains(string(b), want) {
			t.Errorf("managed /etc/hosts lacks %q:\n%s", want, b)
		}
	}
	h.m.Remove(pod.UID)
	eventually(t, "removed", func() (bool, string) { return !h.m.Known(pod.UID), "" })
	if _, err := os.Stat(host); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind (%v)", host, err)
	}
}
