package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
)

// TestKubeletBehavioursOfTheConformanceSuite runs, on real containerd under
// a real apiserver, what upstream's node Conformance specs check of the
// kubelet: environment from ConfigMaps, Secrets and Services, the node's
// allocatable as unset limits, activeDeadlineSeconds, and sysctls.
func TestKubeletBehavioursOfTheConformanceSuite(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{AgentArgs: []string{"--allowed-unsafe-sysctls", "kernel.msg*"}})
	ctx := context.Background()
	const ns = "default"
	pods := c.Client.CoreV1().Pods(ns)
	t.Cleanup(func() {
		// The agent leaves its pods running when it stops: they go first,
		// with their volumes.
		if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("deleting the pods: %v", err)
			return
		}
		harness.WaitFor(t, 90*time.Second, "every pod gone", func() (bool, string) {
			list, err := pods.List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(list.Items) == 0, fmt.Sprintf("%d pods left", len(list.Items))
		})
	})
	harness.WaitFor(t, 90*time.Second, "the default service account", func() (bool, string) {
		_, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	grace := int64(1)
	pod := func(name string, command string, mutate func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: c.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sh", "-c", command}}},
		}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	create := func(t *testing.T, p *v1.Pod) {
		t.Helper()
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// output runs p to completion and returns its log.
	output := func(t *testing.T, p *v1.Pod) string {
		t.Helper()
		create(t, p)
		harness.WaitFor(t, 90*time.Second, "pod "+p.Name+" Succeeded", func() (bool, string) {
			got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if got.Status.Phase == v1.PodFailed {
				t.Fatalf("pod %s Failed: %+v", p.Name, got.Status)
			}
			return got.Status.Phase == v1.PodSucceeded, fmt.Sprintf("%s %+v", got.Status.Phase, got.Status.ContainerStatuses)
		})
		b, err := pods.GetLogs(p.Name, &v1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	hasLines := func(t *testing.T, out string, want ...string) {
		t.Helper()
		lines := map[string]bool{}
		for _, l := range strings.Split(out, "\n") {
			lines[l] = true
		}
		for _, w := range want {
			if !lines[w] {
				t.Errorf("output lacks the line %q:\n%s", w, out)
			}
		}
	}

	t.Run("env from a ConfigMap and a Secret, waiting for a missing ConfigMap", func(t *testing.T) {
		optional := true
		p := pod("env-refs", "env", func(p *v1.Pod) {
			ctr := &p.Spec.Containers[0]
			ctr.EnvFrom = []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}},
				{Prefix: "p_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: &optional}},
			}
			ctr.Env = []v1.EnvVar{
				{Name: "FROM_KEY", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "data_1"}}},
				{Name: "SECRET_KEY", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
				{Name: "COMPOSED", Value: "$(FROM_KEY)-$(p_password)"},
			}
		})
		if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
			Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		create(t, p)
		harness.WaitFor(t, 60*time.Second, "CreateContainerConfigError for the missing ConfigMap", func() (bool, string) {
			got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || len(got.Status.ContainerStatuses) == 0 {
				return false, fmt.Sprint(err)
			}
			w := got.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == `configmap "settings" not found`, fmt.Sprintf("%+v", got.Status.ContainerStatuses[0].State)
		})
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
			Data: map[string]string{"data_1": "value-1", "data_2": "value-2"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 90*time.Second, "pod Succeeded once the ConfigMap exists", func() (bool, string) {
			got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == v1.PodSucceeded, fmt.Sprint(err)
		})
		b, err := pods.GetLogs(p.Name, &v1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hasLines(t, string(b), "data_1=value-1", "data_2=value-2", "p_password=s3cret", "FROM_KEY=value-1", "SECRET_KEY=s3cret", "COMPOSED=value-1-s3cret")
	})

	t.Run("a missing key is CreateContainerConfigError with the kubelet's message", func(t *testing.T) {
		p := pod("env-missing-key", "env", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "nope"}}}}
		})
		create(t, p)
		harness.WaitFor(t, 60*time.Second, "CreateContainerConfigError", func() (bool, string) {
			got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || len(got.Status.ContainerStatuses) == 0 {
				return false, fmt.Sprint(err)
			}
			w := got.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == "couldn't find key nope in ConfigMap default/settings", fmt.Sprintf("%+v", got.Status.ContainerStatuses[0].State)
		})
	})

	t.Run("service environment variables", func(t *testing.T) {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "fooservice"}, Spec: v1.ServiceSpec{
			ClusterIP: "10.43.77.7", Selector: map[string]string{"app": "x"},
			Ports: []v1.ServicePort{{Name: "http", Port: 8765, Protocol: v1.ProtocolTCP}},
		}}
		if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the agent's Service informer sees it
		out := output(t, pod("svc-env", "env", nil))
		hasLines(t, out, "FOOSERVICE_SERVICE_HOST=10.43.77.7", "FOOSERVICE_SERVICE_PORT=8765", "FOOSERVICE_SERVICE_PORT_HTTP=8765",
			"FOOSERVICE_PORT=tcp://10.43.77.7:8765", "FOOSERVICE_PORT_8765_TCP=tcp://10.43.77.7:8765", "FOOSERVICE_PORT_8765_TCP_PROTO=tcp",
			"FOOSERVICE_PORT_8765_TCP_PORT=8765", "FOOSERVICE_PORT_8765_TCP_ADDR=10.43.77.7")
		if k, err := c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil && k.Spec.ClusterIP != "" {
			hasLines(t, out, "KUBERNETES_SERVICE_HOST="+k.Spec.ClusterIP)
		}
		disabled := false
		out = output(t, pod("svc-env-disabled", "env", func(p *v1.Pod) { p.Spec.EnableServiceLinks = &disabled }))
		if strings.Contains(out, "FOOSERVICE_") {
			t.Errorf("enableServiceLinks=false, yet the pod got the service's variables:\n%s", out)
		}
	})

	t.Run("unset limits read as the node's allocatable", func(t *testing.T) {
		p := pod("limits", "echo CPU_LIMIT=$CPU_LIMIT; echo MEMORY_LIMIT=$MEMORY_LIMIT; cat /etc/podinfo/cpu_limit; echo; cat /etc/podinfo/memory_limit; echo", func(p *v1.Pod) {
			ctr := &p.Spec.Containers[0]
			ctr.Env = []v1.EnvVar{
				{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
				{Name: "MEMORY_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory"}}},
			}
			ctr.VolumeMounts = []v1.VolumeMount{{Name: "podinfo", MountPath: "/etc/podinfo"}}
			p.Spec.Volumes = []v1.Volume{{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "cpu_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu"}},
				{Path: "memory_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory"}},
			}}}}}
		})
		out := output(t, p)
		node, err := c.Client.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cpu, mem := node.Status.Allocatable[v1.ResourceCPU], node.Status.Allocatable[v1.ResourceMemory]
		cpuS, memS := strconv.FormatInt(cpu.Value(), 10), strconv.FormatInt(mem.Value(), 10)
		hasLines(t, out, "CPU_LIMIT="+cpuS, "MEMORY_LIMIT="+memS, cpuS, memS)
	})

	t.Run("activeDeadlineSeconds fails the pod", func(t *testing.T) {
		deadline := int64(600)
		p := pod("deadline", "sleep 3600", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline })
		create(t, p)
		harness.WaitFor(t, 90*time.Second, "pod Running", func() (bool, string) {
			got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == v1.PodRunning, fmt.Sprint(err)
		})
		// Shortened by an update: it takes effect.
		patch := []byte(`{"spec":{"activeDeadlineSeconds":2}}`)
		if _, err := pods.Patch(ctx, p.Name, "application/strategic-merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 60*time.Second, "pod Failed/DeadlineExceeded", func() (bool, string) {
			got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return got.Status.Phase == v1.PodFailed && got.Status.Reason == "DeadlineExceeded" &&
				got.Status.Message == "Pod was active on the node longer than the specified deadline", fmt.Sprintf("%s %s %s", got.Status.Phase, got.Status.Reason, got.Status.Message)
		})
		harness.WaitFor(t, 30*time.Second, "its container stopped and the DeadlineExceeded event", func() (bool, string) {
			got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || len(got.Status.ContainerStatuses) == 0 {
				return false, fmt.Sprint(err)
			}
			evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=deadline,reason=DeadlineExceeded"})
			if err != nil {
				return false, err.Error()
			}
			return got.Status.ContainerStatuses[0].State.Terminated != nil && len(evs.Items) > 0, fmt.Sprintf("%+v events=%d", got.Status.ContainerStatuses[0].State, len(evs.Items))
		})
	})

	t.Run("readiness gates hold Ready until their conditions are True", func(t *testing.T) {
		p := pod("gated", "sleep 3600", func(p *v1.Pod) {
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
		})
		create(t, p)
		ready := func(want v1.ConditionStatus) func() (bool, string) {
			return func() (bool, string) {
				got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, c := range got.Status.Conditions {
					if c.Type == v1.PodReady {
						return got.Status.Phase == v1.PodRunning && c.Status == want, fmt.Sprintf("%s %+v", got.Status.Phase, c)
					}
				}
				return false, fmt.Sprint(got.Status.Conditions)
			}
		}
		harness.WaitFor(t, 90*time.Second, "Running, not Ready (ReadinessGatesNotReady)", ready(v1.ConditionFalse))
		patch := []byte(`{"status":{"conditions":[{"type":"example.com/gate","status":"True"}]}}`)
		if _, err := pods.Patch(ctx, p.Name, "application/strategic-merge-patch+json", patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 30*time.Second, "Ready once the gate's condition is True", ready(v1.ConditionTrue))
	})

	t.Run("safe and allowed sysctls reach the pod", func(t *testing.T) {
		out := output(t, pod("sysctls", "cat /proc/sys/kernel/shm_rmid_forced /proc/sys/kernel/msgmax", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel/shm_rmid_forced", Value: "1"}, {Name: "kernel.msgmax", Value: "10000"}}}
		}))
		hasLines(t, out, "1", "10000")
	})

	t.Run("an unsafe sysctl not allowed rejects the pod", func(t *testing.T) {
		p := pod("sysctl-forbidden", "true", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.shmmax", Value: "100000000"}}}
		})
		create(t, p)
		harness.WaitFor(t, 60*time.Second, "pod Failed/SysctlForbidden", func() (bool, string) {
			got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return got.Status.Phase == v1.PodFailed && got.Status.Reason == "SysctlForbidden" &&
				got.Status.Message == `Pod was rejected: forbidden sysctl: "kernel.shmmax" not allowlisted`, fmt.Sprintf("%s %s %s", got.Status.Phase, got.Status.Reason, got.Status.Message)
		})
		evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=sysctl-forbidden,reason=SysctlForbidden"})
		if err != nil || len(evs.Items) == 0 || evs.Items[0].Type != v1.EventTypeWarning {
			t.Errorf("SysctlForbidden Warning event: %v %+v", err, evs)
		}
	})
}
