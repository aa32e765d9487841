package podworker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"berth/agent/containerconfig"
	"berth/agent/dns"
	"berth/agent/etchosts"
)

// etcHostsHook keeps the pod's managed /etc/hosts (agent/etchosts) under
// <root>/pods/<uid>: written and mounted before each container that gets
// it is created (mount), removed with the pod. The pod's resolv.conf is
// the runtime's, from the sandbox config's DNS settings.
type etcHostsHook struct {
	root, nodeHosts, clusterDomain string
}

var _ TeardownHook = (*etcHostsHook)(nil)

// mount writes the pod's /etc/hosts and adds its mount to opts.
func (h *etcHostsHook) mount(pod *v1.Pod, podIPs []string, opts *containerconfig.Options) error {
	hostname, domain, err := dns.Hostname(pod, h.clusterDomain)
	if err != nil {
		return err
	}
	m, err := etchosts.File(filepath.Join(h.root, "pods", string(pod.UID)), h.nodeHosts, pod, podIPs, hostname, domain)
	if err != nil {
		return err
	}
	opts.Mounts = append(opts.Mounts, m)
	return nil
}

func (h *etcHostsHook) Teardown(_ context.Context, pod podRef) error {
	err := os.Remove(filepath.Join(h.root, "pods", string(pod.UID), etchosts.FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
