package containerconfig

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/internal/errdefs"
)

func i64(v int64) *int64    { return &v }
func boolp(v bool) *bool    { return &v }
func strp(s string) *string { return &s }

const gib = 1 << 30

func buildPod() *v1.Pod {
	grace := int64(30)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			SecurityContext:               &v1.PodSecurityContext{},
			Containers: []v1.Container{{
				Name:                     "app",
				Image:                    "busybox:1.36",
				Command:                  []string{"/bin/sh", "-c", "echo $(GREETING) $$(GREETING) $(NOPE)"},
				Args:                     []string{"$(GREETING)", "--port=$(PORT)"},
				WorkingDir:               "/work",
				Env:                      []v1.EnvVar{{Name: "GREETING", Value: "hello"}, {Name: "PORT", Value: "8080"}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: v1.TerminationMessageReadFile,
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("2Gi")},
				},
			}},
		},
	}
}

func buildOptions() Options {
	return Options{
		RestartCount:               3,
		ImageRef:                   "sha256:abc",
		Mounts:                     []*runtimeapi.Mount{{HostPath: "/var/lib/berth/pods/uid-1/volumes/data", ContainerPath: "/data"}},
		TerminationMessageHostPath: "/var/lib/berth/pods/uid-1/containers/app/0a1b2c3d",
		MemoryCapacity:             10 * gib,
	}
}

// buildWant is the full config of buildPod's container under buildOptions.
func buildWant(p *v1.Pod) *runtimeapi.ContainerConfig {
	c := &p.Spec.Containers[0]
	return &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3},
		Image:      &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "busybox:1.36"},
		Command:    []string{"/bin/sh", "-c", "echo hello $(GREETING) $(NOPE)"},
		Args:       []string{"hello", "--port=8080"},
		WorkingDir: "/work",
		Envs: []*runtimeapi.KeyValue{
			{Key: "GREETING", Value: []byte("hello")},
			{Key: "PORT", Value: []byte("8080")},
		},
		Mounts: []*runtimeapi.Mount{
			{HostPath: "/var/lib/berth/pods/uid-1/volumes/data", ContainerPath: "/data"},
			{HostPath: "/var/lib/berth/pods/uid-1/containers/app/0a1b2c3d", ContainerPath: "/dev/termination-log"},
		},
		Labels:      cri.ContainerLabels(p, c),
		Annotations: cri.ContainerAnnotations(p, c, 3),
		LogPath:     "app/3.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{
				CpuShares:          102,
				CpuQuota:           50000,
				CpuPeriod:          100000,
				MemoryLimitInBytes: 2 * gib,
				OomScoreAdj:        900,
			},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network:       runtimeapi.NamespaceMode_POD,
					Pid:           runtimeapi.NamespaceMode_CONTAINER,
					Ipc:           runtimeapi.NamespaceMode_POD,
					UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE},
				},
				MaskedPaths:   defaultMaskedPaths,
				ReadonlyPaths: defaultReadonlyPaths,
				Seccomp:       &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			},
		},
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod, *Options)
		want   func(*v1.Pod, *runtimeapi.ContainerConfig)
	}{
		{"burstable container", nil, nil},
		{"first start, no image ref, no termination file, stdin and tty", func(p *v1.Pod, o *Options) {
			o.RestartCount, o.ImageRef, o.TerminationMessageHostPath, o.Mounts = 0, "", "", nil
			c := &p.Spec.Containers[0]
			c.Stdin, c.StdinOnce, c.TTY = true, true, true
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Metadata.Attempt = 0
			w.Image.Image = "busybox:1.36"
			w.Mounts = nil
			w.LogPath = "app/0.log"
			w.Annotations = cri.ContainerAnnotations(p, &p.Spec.Containers[0], 0)
			w.Stdin, w.StdinOnce, w.Tty = true, true, true
		}},
		{"guaranteed pod on cgroup v2", func(p *v1.Pod, o *Options) {
			c := &p.Spec.Containers[0]
			c.Resources.Requests = nil // default to the limits
			o.CgroupV2 = true
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.Resources = &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000,
				MemoryLimitInBytes: 2 * gib, OomScoreAdj: -997, Unified: map[string]string{"memory.oom.group": "1"}}
		}},
		{"besteffort pod", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{}
			o.MemoryCapacity = 0
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.Resources = &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000}
		}},
		{"security context merged pod → container", func(p *v1.Pod, o *Options) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{
				RunAsUser: i64(1000), RunAsGroup: i64(3000), RunAsNonRoot: boolp(true),
				FSGroup: i64(2000), SupplementalGroups: []int64{4000},
				SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1"},
			}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{
				RunAsUser:                i64(1001),
				ReadOnlyRootFilesystem:   boolp(true),
				AllowPrivilegeEscalation: boolp(false),
				Capabilities: &v1.Capabilities{
					Add:  []v1.Capability{"NET_ADMIN", "CAP_SYS_TIME", "cap_chown"},
					Drop: []v1.Capability{"ALL"},
				},
			}
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			sc := w.Linux.SecurityContext
			sc.RunAsUser = &runtimeapi.Int64Value{Value: 1001}
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: 3000}
			sc.SupplementalGroups = []int64{2000, 4000}
			sc.SelinuxOptions = &runtimeapi.SELinuxOption{Level: "s0:c1"}
			sc.ReadonlyRootfs = true
			sc.NoNewPrivs = true
			sc.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN", "SYS_TIME", "chown"}, DropCapabilities: []string{"ALL"}}
		}},
		{"privileged, unmasked proc, escalation allowed", func(p *v1.Pod, o *Options) {
			unmasked := v1.UnmaskedProcMount
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{
				Privileged: boolp(true), AllowPrivilegeEscalation: boolp(true), ProcMount: &unmasked}
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			sc := w.Linux.SecurityContext
			sc.Privileged = true
			sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
		}},
		{"image user fills runAsUser", func(p *v1.Pod, o *Options) {
			o.ImageUID = i64(65534)
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: 65534}
		}},
		{"image user name passed through", func(p *v1.Pod, o *Options) {
			o.ImageUser = "nobody"
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.RunAsUsername = "nobody"
		}},
		{"runAsNonRoot with non-root image uid", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsNonRoot: boolp(true)}
			o.ImageUID = i64(1000)
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: 1000}
		}},
		{"host namespaces", func(p *v1.Pod, o *Options) {
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			ns := w.Linux.SecurityContext.NamespaceOptions
			ns.Network, ns.Pid, ns.Ipc = runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_NODE
		}},
		{"seccomp default on", func(p *v1.Pod, o *Options) { o.SeccompDefault = true }, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
		}},
		{"pod seccomp localhost", func(p *v1.Pod, o *Options) {
			o.SeccompProfileRoot = "/var/lib/berth/seccomp"
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: strp("audit.json")}
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
				LocalhostRef: "/var/lib/berth/seccomp/audit.json"}
		}},
		{"container seccomp wins over pod", func(p *v1.Pod, o *Options) {
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
		}},
		{"apparmor from pod field", func(p *v1.Pod, o *Options) {
			p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
			w.Linux.SecurityContext.ApparmorProfile = "runtime/default"
		}},
		{"apparmor annotation wins over pod field", func(p *v1.Pod, o *Options) {
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "localhost/k8s-deny-write"}
			p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny-write"}
			w.Linux.SecurityContext.ApparmorProfile = "localhost/k8s-deny-write"
		}},
		{"apparmor container field wins", func(p *v1.Pod, o *Options) {
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}
		}, func(p *v1.Pod, w *runtimeapi.ContainerConfig) {
			w.Linux.SecurityContext.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
			w.Linux.SecurityContext.ApparmorProfile = "unconfined"
		}},
		{"init container", func(p *v1.Pod, o *Options) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"true"}}}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, opts := buildPod(), buildOptions()
			if tt.mutate != nil {
				tt.mutate(p, &opts)
			}
			want := buildWant(p)
			if tt.want != nil {
				tt.want(p, want)
			}
			got, err := Build(p, &p.Spec.Containers[0], opts)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Fatalf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The kubelet keys, spelled out once, so a change in the cri helpers shows here.
func TestBuildLabelsAndAnnotations(t *testing.T) {
	p := buildPod()
	got, err := Build(p, &p.Spec.Containers[0], buildOptions())
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "shop",
		"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": "app",
	}
	if diff := cmp.Diff(wantLabels, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	for k, v := range map[string]string{
		"io.kubernetes.container.restartCount":             "3",
		"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
		"io.kubernetes.container.terminationMessagePolicy": "File",
		"io.kubernetes.pod.terminationGracePeriod":         "30",
		"io.kubernetes.container.type":                     "container",
	} {
		if got.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got.Annotations[k], v)
		}
	}
	if got.Annotations["io.kubernetes.container.hash"] == "" {
		t.Errorf("no container hash annotation")
	}
}

func TestBuildInitContainer(t *testing.T) {
	p := buildPod()
	p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo $(X)"},
		Env: []v1.EnvVar{{Name: "X", Value: "1"}}}}
	got, err := Build(p, &p.Spec.InitContainers[0], Options{MemoryCapacity: 10 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata.Name != "init" || got.LogPath != "init/0.log" || strings.Join(got.Command, " ") != "sh -c echo 1" {
		t.Fatalf("init config = %v", got)
	}
	if got.Annotations[cri.AnnotationContainerType] != string(cri.ContainerTypeInit) {
		t.Fatalf("container type annotation = %q, want init", got.Annotations[cri.AnnotationContainerType])
	}
	// An init container without resources in a burstable pod: no request → 999.
	if got.Linux.Resources.OomScoreAdj != 999 || got.Linux.Resources.CpuShares != 2 {
		t.Fatalf("init resources = %v", got.Linux.Resources)
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod, *Options)
		is     error
		sub    string
	}{
		{"runAsUser 0 with runAsNonRoot", func(p *v1.Pod, o *Options) {
			p.Spec.SecurityContext.RunAsNonRoot = boolp(true)
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: i64(0)}
		}, errdefs.ErrPermissionDenied, "container's runAsUser breaks non-root policy"},
		{"root image with runAsNonRoot", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsNonRoot: boolp(true)}
			o.ImageUID = i64(0)
		}, errdefs.ErrPermissionDenied, "image will run as root"},
		{"named image user with runAsNonRoot", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsNonRoot: boolp(true)}
			o.ImageUser = "app"
		}, errdefs.ErrPermissionDenied, "non-numeric user (app)"},
		{"no image", func(p *v1.Pod, o *Options) { p.Spec.Containers[0].Image = "" }, errdefs.ErrInvalidArgument, "spec.containers[0].image"},
		{"negative restart count", func(p *v1.Pod, o *Options) { o.RestartCount = -1 }, errdefs.ErrInvalidArgument, "Options.RestartCount"},
		{"burstable without memory capacity", func(p *v1.Pod, o *Options) { o.MemoryCapacity = 0 }, errdefs.ErrInvalidArgument, "Options.MemoryCapacity"},
		{"localhost seccomp without profile", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}
		}, errdefs.ErrInvalidArgument, "spec.containers[0].securityContext.seccompProfile.localhostProfile"},
		{"bad apparmor annotation", func(p *v1.Pod, o *Options) {
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "enforce-everything"}
		}, errdefs.ErrInvalidArgument, "container.apparmor.security.beta.kubernetes.io/app"},
		{"user namespaces", func(p *v1.Pod, o *Options) { p.Spec.HostUsers = boolp(false) }, errdefs.ErrUnimplemented, "spec.hostUsers"},
		{"unresolved secret env", func(p *v1.Pod, o *Options) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: "PW", ValueFrom: &v1.EnvVarSource{
				SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "password"}}})
		}, errdefs.ErrNotFound, "spec.containers[0].env[2].valueFrom.secretKeyRef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, opts := buildPod(), buildOptions()
			tt.mutate(p, &opts)
			cfg, err := Build(p, &p.Spec.Containers[0], opts)
			if cfg != nil || !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.sub) {
				t.Fatalf("Build = %v, %v; want nil and %v containing %q", cfg, err, tt.is, tt.sub)
			}
		})
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	p := buildPod()
	c := &p.Spec.Containers[0]
	// Not requested: anything goes, even root.
	if err := VerifyRunAsNonRoot(p, c, i64(0), ""); err != nil {
		t.Fatalf("without runAsNonRoot: %v", err)
	}
	p.Spec.SecurityContext.RunAsNonRoot = boolp(true)
	// Unknown image user: the runtime is trusted, as upstream.
	if err := VerifyRunAsNonRoot(p, c, nil, ""); err != nil {
		t.Fatalf("unknown image user: %v", err)
	}
	// Explicit non-root uid overrides a root image.
	c.SecurityContext = &v1.SecurityContext{RunAsUser: i64(5)}
	if err := VerifyRunAsNonRoot(p, c, i64(0), ""); err != nil {
		t.Fatalf("runAsUser 5: %v", err)
	}
	// The container can switch the check off.
	c.SecurityContext = &v1.SecurityContext{RunAsNonRoot: boolp(false)}
	if err := VerifyRunAsNonRoot(p, c, i64(0), ""); err != nil {
		t.Fatalf("container runAsNonRoot=false: %v", err)
	}
	err := VerifyRunAsNonRoot(p, &v1.Container{Name: "x", SecurityContext: &v1.SecurityContext{RunAsUser: i64(0)}}, nil, "")
	if err == nil || !strings.Contains(err.Error(), `pod: "web_shop(uid-1)", container: x`) {
		t.Fatalf("err = %v, want it to name the pod and container", err)
	}
}

func TestLogPath(t *testing.T) {
	if got := LogPath("app", 12); got != "app/12.log" {
		t.Fatalf("LogPath = %q", got)
	}
}

// An ephemeral container targeting a container joins its process namespace
// (TARGET), unless the pod shares one process namespace (POD).
func TestBuildEphemeralContainerTarget(t *testing.T) {
	p := buildPod()
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{}
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36"},
		TargetContainerName:      "app",
	}}
	c := (*v1.Container)(&p.Spec.EphemeralContainers[0].EphemeralContainerCommon)
	got, err := Build(p, c, Options{MemoryCapacity: 10 * gib, TargetContainerID: "app-id"})
	if err != nil {
		t.Fatal(err)
	}
	ns := got.Linux.SecurityContext.NamespaceOptions
	if ns.Pid != runtimeapi.NamespaceMode_TARGET || ns.TargetId != "app-id" {
		t.Errorf("pid namespace %v target %q, want TARGET app-id", ns.Pid, ns.TargetId)
	}
	if got.Annotations[cri.AnnotationContainerType] != string(cri.ContainerTypeEphemeral) {
		t.Errorf("container type annotation %q", got.Annotations[cri.AnnotationContainerType])
	}
	p.Spec.ShareProcessNamespace = boolp(true)
	if got, err = Build(p, c, Options{MemoryCapacity: 10 * gib, TargetContainerID: "app-id"}); err != nil {
		t.Fatal(err)
	}
	if ns := got.Linux.SecurityContext.NamespaceOptions; ns.Pid != runtimeapi.NamespaceMode_POD || ns.TargetId != "" {
		t.Errorf("shared process namespace: pid %v target %q, want POD", ns.Pid, ns.TargetId)
	}
	if got, err = Build(p, &p.Spec.Containers[0], Options{MemoryCapacity: 10 * gib}); err != nil || got.Linux.SecurityContext.NamespaceOptions.TargetId != "" {
		t.Errorf("a regular container got a target (%v)", err)
	}
}
