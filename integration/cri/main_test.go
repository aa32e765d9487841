// Package cri_test drives berth's CRI client (berth/cri) against a real
// containerd started by nodeenv: sandboxes with CNI networking, image pulls
// from the local registries, the container lifecycle, exec, logs, label
// filters, idempotent stop/remove.
package cri_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { nodeenv.Main(m, nodeenv.Options{}) }

// timeout bounds each test's CRI work.
const timeout = 2 * time.Minute

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// newClient connects berth's CRI client to the package's containerd.
func newClient(t *testing.T) (*cri.Client, *nodeenv.Env) {
	t.Helper()
	nodeenv.Require(t)
	env := nodeenv.Current()
	c, err := cri.New(testContext(t), cri.Config{Endpoint: env.Endpoint})
	if err != nil {
		t.Fatalf("cri.New(%s): %v", env.Endpoint, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, env
}

var podSeq int

// newPod is a pod with a name and UID unique in this package.
func newPod(t *testing.T, containers ...string) *v1.Pod {
	podSeq++
	name := fmt.Sprintf("%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), podSeq)
	if len(name) > 50 {
		name = name[:50]
	}
	grace := int64(5)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "integration",
			UID:    types.UID(fmt.Sprintf("0000-%d-%d", time.Now().UnixNano(), podSeq)),
			Labels: map[string]string{"app": "cri-test"},
		},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
			Name: c, Image: nodeenv.Current().BusyboxImage,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
		})
	}
	return pod
}

// sandboxConfig is the kubelet-shaped sandbox config for pod, logging into a
// test temp dir.
func sandboxConfig(t *testing.T, pod *v1.Pod) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID),
		},
		Hostname:     pod.Name,
		LogDirectory: filepath.Join(t.TempDir(), fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		Labels:       cri.SandboxLabels(pod),
		Annotations:  cri.SandboxAnnotations(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			},
		},
	}
}

// runSandbox starts pod's sandbox and, at cleanup, stops and removes it and
// checks containerd no longer knows it.
func runSandbox(t *testing.T, c *cri.Client, pod *v1.Pod) (string, *runtimeapi.PodSandboxConfig) {
	t.Helper()
	cfg := sandboxConfig(t, pod)
	id, err := c.RunPodSandbox(testContext(t), cfg, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	t.Cleanup(func() { removeSandbox(t, c, id) })
	return id, cfg
}

func removeSandbox(t *testing.T, c *cri.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.StopPodSandbox(ctx, id); err != nil {
		t.Errorf("StopPodSandbox(%s): %v", id, err)
	}
	if err := c.RemovePodSandbox(ctx, id); err != nil {
		t.Errorf("RemovePodSandbox(%s): %v", id, err)
	}
	items, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: id})
	if err != nil || len(items) != 0 {
		t.Errorf("sandbox %s still listed after removal: %v %v", id, items, err)
	}
}

// pullBusybox makes sure the busybox image is present (another test may
// have removed it).
func pullBusybox(t *testing.T, c *cri.Client) string {
	t.Helper()
	env := nodeenv.Current()
	ref, err := c.PullImage(testContext(t), env.BusyboxImage, nil, nil)
	if err != nil {
		t.Fatalf("PullImage(%s): %v", env.BusyboxImage, err)
	}
	return ref
}

// containerConfig is the kubelet-shaped config for pod's container name.
func containerConfig(pod *v1.Pod, name string, command ...string) *runtimeapi.ContainerConfig {
	var spec *v1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			spec = &pod.Spec.Containers[i]
		}
	}
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name},
		Image:       &runtimeapi.ImageSpec{Image: spec.Image},
		Command:     command,
		LogPath:     filepath.Join(name, "0.log"),
		Labels:      cri.ContainerLabels(pod, spec),
		Annotations: cri.ContainerAnnotations(pod, spec, 0),
		Linux:       &runtimeapi.LinuxContainerConfig{},
	}
}

// createContainer creates (not starts) a container and removes it at cleanup.
func createContainer(t *testing.T, c *cri.Client, sandboxID string, sbCfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	t.Helper()
	id, err := c.CreateContainer(testContext(t), sandboxID, cfg, sbCfg)
	if err != nil {
		t.Fatalf("CreateContainer(%s): %v", cfg.Metadata.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := c.StopContainer(ctx, id, 0); err != nil {
			t.Errorf("StopContainer(%s): %v", id, err)
		}
		if err := c.RemoveContainer(ctx, id); err != nil {
			t.Errorf("RemoveContainer(%s): %v", id, err)
		}
	})
	return id
}

// waitContainerState polls ContainerStatus until the container is in want.
func waitContainerState(t *testing.T, c *cri.Client, id string, want runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	t.Helper()
	ctx := testContext(t)
	for {
		st, err := c.ContainerStatus(ctx, id, false)
		if err != nil {
			t.Fatalf("ContainerStatus(%s): %v", id, err)
		}
		if st.GetStatus().GetState() == want {
			return st.GetStatus()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("container %s is %v, never became %v", id, st.GetStatus().GetState(), want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// inPodCIDR checks ip is a host address of the environment's pod network.
func inPodCIDR(t *testing.T, ip string) {
	t.Helper()
	_, n, err := net.ParseCIDR(nodeenv.Current().PodCIDR)
	if err != nil {
		t.Fatal(err)
	}
	parsed := net.ParseIP(ip)
	if parsed == nil || !n.Contains(parsed) {
		t.Fatalf("pod IP %q is not in the env's pod CIDR %s", ip, n)
	}
}
