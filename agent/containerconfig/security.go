package containerconfig

import (
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/sandboxconfig"
	"berth/internal/errdefs"
)

// The paths the kubelet masks and makes read-only in every container whose
// procMount is not Unmasked (the runtime drops them for privileged ones).
var (
	defaultMaskedPaths = []string{
		"/proc/asound",
		"/proc/acpi",
		"/proc/interrupts",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/proc/sched_debug",
		"/proc/scsi",
		"/sys/firmware",
		"/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{
		"/proc/bus",
		"/proc/fs",
		"/proc/irq",
		"/proc/sys",
		"/proc/sysrq-trigger",
	}
)

// AppArmor annotation (deprecated, still honoured by the kubelet) and its values.
const (
	appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"
	appArmorRuntimeDefault   = "runtime/default"
	appArmorUnconfined       = "unconfined"
	appArmorLocalhostPrefix  = "localhost/"
)

// EffectiveSecurityContext merges the pod's security context into the
// container's, as upstream does: the container's fields win; from the pod
// come runAsUser, runAsGroup, runAsNonRoot, seLinuxOptions and
// windowsOptions. Never nil.
func EffectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	eff := &v1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		eff.RunAsUser = psc.RunAsUser
		eff.RunAsGroup = psc.RunAsGroup
		eff.RunAsNonRoot = psc.RunAsNonRoot
		eff.SELinuxOptions = psc.SELinuxOptions
		eff.WindowsOptions = psc.WindowsOptions
	}
	csc := c.SecurityContext
	if csc == nil {
		return eff
	}
	overlay(&eff.SELinuxOptions, csc.SELinuxOptions)
	overlay(&eff.WindowsOptions, csc.WindowsOptions)
	overlay(&eff.Capabilities, csc.Capabilities)
	overlay(&eff.Privileged, csc.Privileged)
	overlay(&eff.RunAsUser, csc.RunAsUser)
	overlay(&eff.RunAsGroup, csc.RunAsGroup)
	overlay(&eff.RunAsNonRoot, csc.RunAsNonRoot)
	overlay(&eff.ReadOnlyRootFilesystem, csc.ReadOnlyRootFilesystem)
	overlay(&eff.AllowPrivilegeEscalation, csc.AllowPrivilegeEscalation)
	overlay(&eff.ProcMount, csc.ProcMount)
	return eff
}

// VerifyRunAsNonRoot applies runAsNonRoot as the kubelet does before creating
// a container: with runAsNonRoot true, an explicit runAsUser 0 is refused, and
// without a runAsUser the image's user decides — uid 0 is refused, a
// non-numeric user name cannot be checked and is refused, an unknown user
// (imageUID nil, imageUser empty) passes. The error names the field and the pod.
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, imageUID *int64, imageUser string) error {
	sc := EffectiveSecurityContext(pod, c)
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	who := fmt.Sprintf("pod: %q, container: %s", pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (%s): runAsUser is 0 with runAsNonRoot: %w", who, errdefs.ErrPermissionDenied)
		}
		return nil
	}
	switch {
	case imageUID != nil && *imageUID == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (%s): %w", who, errdefs.ErrPermissionDenied)
	case imageUID == nil && imageUser != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (%s): %w",
			imageUser, who, errdefs.ErrPermissionDenied)
	}
	return nil
}

// securityContext builds the container's CRI security context.
func securityContext(pod *v1.Pod, c *v1.Container, opts Options) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := EffectiveSecurityContext(pod, c)
	path := containerPath(pod, c)
	out := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:   capabilities(eff.Capabilities),
		SelinuxOptions: sandboxconfig.SELinuxOption(eff.SELinuxOptions),
		Privileged:     eff.Privileged != nil && *eff.Privileged,
		ReadonlyRootfs: eff.ReadOnlyRootFilesystem != nil && *eff.ReadOnlyRootFilesystem,
		// no_new_privs only when allowPrivilegeEscalation is explicitly false.
		NoNewPrivs:    eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation,
		MaskedPaths:   append([]string(nil), defaultMaskedPaths...),
		ReadonlyPaths: append([]string(nil), defaultReadonlyPaths...),
	}
	if eff.ProcMount != nil && *eff.ProcMount == v1.UnmaskedProcMount {
		out.MaskedPaths, out.ReadonlyPaths = []string{}, []string{}
	}
	if eff.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	} else {
		if opts.ImageUID != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *opts.ImageUID}
		}
		out.RunAsUsername = opts.ImageUser
	}
	if eff.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	var err error
	if out.Seccomp, err = seccompProfile(pod, c, path, opts); err != nil {
		return nil, err
	}
	if out.Apparmor, out.ApparmorProfile, err = appArmorProfile(pod, c, path); err != nil {
		return nil, err
	}
	if out.NamespaceOptions, err = sandboxconfig.NamespaceOptions(pod); err != nil {
		return nil, err
	}
	if opts.TargetContainerID != "" && out.NamespaceOptions.GetPid() == runtimeapi.NamespaceMode_CONTAINER {
		out.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		out.NamespaceOptions.TargetId = opts.TargetContainerID
	}
	out.SupplementalGroups = sandboxconfig.SupplementalGroups(pod.Spec.SecurityContext)
	if out.SupplementalGroupsPolicy, err = sandboxconfig.SupplementalGroupsPolicy(pod.Spec.SecurityContext); err != nil {
		return nil, err
	}
	return out, nil
}

// capabilities converts capability names for the runtime. Names are passed
// without the CAP_ prefix, which CRI runtimes add (containerd would turn
// CAP_NET_ADMIN into CAP_CAP_NET_ADMIN), so both spellings work.
func capabilities(c *v1.Capabilities) *runtimeapi.Capability {
	if c == nil {
		return nil
	}
	conv := func(in []v1.Capability) []string {
		out := make([]string, 0, len(in))
		for _, name := range in {
			s := string(name)
			if len(s) > 4 && strings.EqualFold(s[:4], "CAP_") {
				s = s[4:]
			}
			out = append(out, s)
		}
		return out
	}
	return &runtimeapi.Capability{AddCapabilities: conv(c.Add), DropCapabilities: conv(c.Drop)}
}

// seccompProfile picks the container's seccomp profile: the container's
// field, else the pod's, else RuntimeDefault with opts.SeccompDefault (the
// kubelet's --seccomp-default) and Unconfined without.
func seccompProfile(pod *v1.Pod, c *v1.Container, path string, opts Options) (*runtimeapi.SecurityProfile, error) {
	var p *v1.SeccompProfile
	field := path + ".securityContext.seccompProfile"
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	} else if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.SeccompProfile != nil {
		p = pod.Spec.SecurityContext.SeccompProfile
		field = "spec.securityContext.seccompProfile"
	}
	if p == nil {
		if opts.SeccompDefault {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("%s.localhostProfile: required when type is Localhost: %w", field, errdefs.ErrInvalidArgument)
		}
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(opts.SeccompProfileRoot, *p.LocalhostProfile),
		}, nil
	}
	return nil, fmt.Errorf("%s.type: unsupported value %q: %w", field, p.Type, errdefs.ErrInvalidArgument)
}

// appArmorProfile picks the container's AppArmor profile — the container's
// field, else its (deprecated) annotation, else the pod's field; none leaves
// it to the runtime — and returns it in both the structured and the
// deprecated string form, as the kubelet sends them.
func appArmorProfile(pod *v1.Pod, c *v1.Container, path string) (*runtimeapi.SecurityProfile, string, error) {
	var p *v1.AppArmorProfile
	field := path + ".securityContext.appArmorProfile"
	switch {
	case c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil:
		p = c.SecurityContext.AppArmorProfile
	case pod.Annotations[appArmorAnnotationPrefix+c.Name] != "":
		field = "metadata.annotations[" + appArmorAnnotationPrefix + c.Name + "]"
		v := pod.Annotations[appArmorAnnotationPrefix+c.Name]
		switch {
		case v == appArmorRuntimeDefault:
			p = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case v == appArmorUnconfined:
			p = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(v, appArmorLocalhostPrefix):
			name := strings.TrimPrefix(v, appArmorLocalhostPrefix)
			p = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		default:
			return nil, "", fmt.Errorf("%s: unsupported value %q: %w", field, v, errdefs.ErrInvalidArgument)
		}
	case pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.AppArmorProfile != nil:
		p = pod.Spec.SecurityContext.AppArmorProfile
		field = "spec.securityContext.appArmorProfile"
	default:
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, appArmorRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, appArmorUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "" {
			return nil, "", fmt.Errorf("%s.localhostProfile: required when type is Localhost: %w", field, errdefs.ErrInvalidArgument)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			appArmorLocalhostPrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("%s.type: unsupported value %q: %w", field, p.Type, errdefs.ErrInvalidArgument)
}

// overlay sets *dst to src when src is set: a container's field overriding
// the pod's.
func overlay[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}
