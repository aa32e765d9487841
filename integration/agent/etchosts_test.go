package agent_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// As upstream's "KubeletManagedEtcHosts" Conformance spec: containers of a
// pod on the pod network see the agent's /etc/hosts (pod IP with hostname
// and FQDN, host aliases); a container mounting a file at /etc/hosts keeps
// it; a host-network pod gets the node's file under its own header.
func TestManagedEtcHosts(t *testing.T) {
	n := newNode(t)
	n.start()
	nodeHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	own := t.TempDir() + "/hosts"
	if err := os.WriteFile(own, []byte("10.9.9.9\tmine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.write("hosts.yaml", podManifest(n.env, "hosts", `  hostname: web
  subdomain: sub
  hostAliases:
  - ip: 123.45.67.89
    hostnames: [foo, bar]
  volumes:
  - name: own
    hostPath:
      path: `+own+`
      type: File
`, "managed="+sleeper, "own="+sleeper)+"    volumeMounts:\n    - name: own\n      mountPath: /etc/hosts\n")
	n.write("hostnet.yaml", podManifest(n.env, "hostnet", "  hostNetwork: true\n  hostAliases:\n  - ip: 1.2.3.4\n    hostnames: [alias]\n", "app="+sleeper))
	p := n.waitPod("hosts-n1", "Running", time.Minute, running)
	hp := n.waitPod("hostnet-n1", "Running", time.Minute, running)

	want := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		p.Status.PodIP + "\tweb.sub.default.svc.cluster.local\tweb\n" +
		"\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"
	if got := n.catHosts(p, "managed"); got != want {
		t.Errorf("managed /etc/hosts:\n%q\nwant\n%q", got, want)
	}
	if got := n.catHosts(p, "own"); got != "10.9.9.9\tmine\n" {
		t.Errorf("the container's own /etc/hosts was replaced: %q", got)
	}
	want = "# Kubernetes-managed hosts file (host network).\n" + string(nodeHosts) + "\n# Entries added by HostAliases.\n1.2.3.4\talias\n"
	if got := n.catHosts(hp, "app"); got != want {
		t.Errorf("host-network /etc/hosts:\n%q\nwant\n%q", got, want)
	}
	n.removeAllAndWait()
}

// catHosts runs cat /etc/hosts in container name of pod p.
func (n *node) catHosts(p *v1.Pod, name string) string {
	n.t.Helper()
	id := strings.TrimPrefix(containerStatus(p, name).ContainerID, "containerd://")
	out, stderr, code, err := n.cri.ExecSync(context.Background(), id, []string{"cat", "/etc/hosts"}, 10*time.Second)
	if err != nil || code != 0 {
		n.t.Fatalf("cat /etc/hosts in %s: exit %d, %v: %s", name, code, err, stderr)
	}
	return string(out)
}
