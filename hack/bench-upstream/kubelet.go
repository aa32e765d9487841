package main

import (
	"berth/internal/mountinfo"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// kubeletOptions are what differs between the kubelet's runs.
type kubeletOptions struct {
	dir        string // root dir, config, certificates, logs of pods
	manifests  string // staticPodPath; "" for none
	kubeconfig string // "" runs it standalone
	clientCA   string // with kubeconfig: the CA its API authenticates clients with
	nodeName   string
	cgroupRoot string
	port       int
	healthz    int
}

// kubeletConfig is the KubeletConfiguration of a kubelet on the shared
// runtime: the cgroupfs driver (containerd's runc uses it), no swap or
// eviction limits in the way of a busy shared machine, image GC off (the
// images are the benchmark's).
func kubeletConfig(o kubeletOptions, endpoint string) string {
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
cgroupRoot: %s
failSwapOn: false
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
podLogsDir: %s
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
`, endpoint, o.cgroupRoot, o.port, o.healthz, filepath.Join(o.dir, "pod-logs"))
	if o.manifests != "" {
		cfg += "staticPodPath: " + o.manifests + "\n"
	}
	if o.kubeconfig == "" {
		cfg += "authentication: {anonymous: {enabled: false}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n"
	} else {
		cfg += fmt.Sprintf("authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: %s}}\nauthorization: {mode: Webhook}\n", o.clientCA)
	}
	return cfg
}

// startKubelet runs upstream's kubelet with o on the shared runtime and
// waits for its healthz.
func (b *bench) startKubelet(o kubeletOptions) (*proc, error) {
	if err := makeCgroup(o.cgroupRoot); err != nil {
		return nil, fmt.Errorf("cgroup root %s: %w", o.cgroupRoot, err)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(o.dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(kubeletConfig(o, b.rt.endpoint)), 0o644); err != nil {
		return nil, err
	}
	args := []string{"--config", cfgPath, "--root-dir", filepath.Join(o.dir, "root"),
		"--cert-dir", filepath.Join(o.dir, "pki"), "--hostname-override", o.nodeName, "--v", "1"}
	if o.kubeconfig != "" {
		args = append(args, "--kubeconfig", o.kubeconfig, "--node-ip", "127.0.0.1")
	}
	p, err := startProc("kubelet", filepath.Join(b.logs, "kubelet-"+o.nodeName+".log"), filepath.Join(b.upstreamBin, "kubelet"), args...)
	if err != nil {
		return nil, err
	}
	if err := waitHealthz(p, "http://127.0.0.1:"+strconv.Itoa(o.healthz)+"/healthz", 2*time.Minute); err != nil {
		p.stop(time.Minute)
		return nil, err
	}
	return p, nil
}

// kubeletSide is upstream's kubelet standalone with the same static pods.
type kubeletSide struct {
	b   *bench
	dir string
	p   *proc
}

const kubeletCgroupRoot = "/bbench-kubelet"

func (k *kubeletSide) start(context.Context) error {
	manifests := filepath.Join(k.dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return err
	}
	if err := writeManifests(k.dir, k.b.rt.busyboxImage, k.b.maxN); err != nil {
		return err
	}
	var err error
	k.p, err = k.b.startKubelet(kubeletOptions{dir: filepath.Join(k.dir, "kubelet"), manifests: manifests,
		nodeName: "bbench-kubelet", cgroupRoot: kubeletCgroupRoot, port: freePort(), healthz: freePort()})
	if err != nil {
		return err
	}
	time.Sleep(settle)
	return nil
}

func (k *kubeletSide) pids() []int { return []int{k.p.pid()} }

func (k *kubeletSide) launch(_ context.Context, n int) error {
	return moveManifests(k.dir, filepath.Join(k.dir, "manifests"), n)
}

func (k *kubeletSide) teardown(context.Context) error {
	return removeManifests(filepath.Join(k.dir, "manifests"))
}

func (k *kubeletSide) stop() {
	if k.p != nil {
		k.p.stop(time.Minute)
	}
	// The kubelet's pod volumes (tmpfs for projected tokens) are mounted
	// under its root dir: the runtime env's host cleanup unmounts them.
	if err := k.b.rt.removeAll(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	if err := mountinfo.UnmountAll(k.dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	if err := removeCgroup(kubeletCgroupRoot); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
}
