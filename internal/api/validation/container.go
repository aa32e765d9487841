package validation

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const notForInitContainers = "may not be set for init containers without restartPolicy=Always"

var (
	supportedPullPolicies = []string{string(v1.PullAlways), string(v1.PullIfNotPresent), string(v1.PullNever)}
	supportedTermMsgPols  = []string{string(v1.TerminationMessageReadFile), string(v1.TerminationMessageFallbackToLogsOnError)}
	supportedHTTPSchemes  = []string{string(v1.URISchemeHTTP), string(v1.URISchemeHTTPS)}
	supportedPropagations = []string{string(v1.MountPropagationNone), string(v1.MountPropagationHostToContainer), string(v1.MountPropagationBidirectional)}
	// The downward API fields a container env var may reference.
	envFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
		"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
	// The downward API fields a downwardAPI volume item may reference.
	volumeFieldPaths = sets.New("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid")
	// Subscripted downward API paths: metadata.labels['key'].
	subscriptedFieldPath = regexp.MustCompile(`^metadata\.(labels|annotations)\['(.*)'\]$`)
	// Container resource fields a resourceFieldRef may reference.
	resourceFieldRefs = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage")
)

// validateContainers validates the pod's regular containers: at least one,
// unique names, the common container rules, probes and lifecycle, no
// container restartPolicy, and no host port claimed twice.
func validateContainers(containers []v1.Container, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, p)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, p.Child("lifecycle"))...)
		}
		errs = append(errs, validateLivenessProbe(c.LivenessProbe, p.Child("livenessProbe"))...)
		errs = append(errs, validateReadinessProbe(c.ReadinessProbe, p.Child("readinessProbe"))...)
		errs = append(errs, validateStartupProbe(c.StartupProbe, p.Child("startupProbe"))...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	errs = append(errs, validateHostPortConflicts(containers, fldPath)...)
	return errs
}

// validateInitContainers validates init containers: names unique across
// init and regular containers, restartPolicy only Always (sidecars), and
// lifecycle/probes only on sidecars.
func validateInitContainers(containers, regular []v1.Container, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, p)...)
		sidecar := false
		if c.RestartPolicy != nil {
			if *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
				sidecar = true
			} else {
				errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []string{string(v1.ContainerRestartPolicyAlways)}))
			}
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		// Init containers run one at a time, so only ports within one conflict.
		errs = append(errs, validateHostPortConflicts([]v1.Container{*c}, fldPath)...)
		if sidecar {
			if c.Lifecycle != nil {
				errs = append(errs, validateLifecycle(c.Lifecycle, p.Child("lifecycle"))...)
			}
			errs = append(errs, validateLivenessProbe(c.LivenessProbe, p.Child("livenessProbe"))...)
			errs = append(errs, validateReadinessProbe(c.ReadinessProbe, p.Child("readinessProbe"))...)
			errs = append(errs, validateStartupProbe(c.StartupProbe, p.Child("startupProbe"))...)
			continue
		}
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(p.Child("lifecycle"), notForInitContainers))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("livenessProbe"), notForInitContainers))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("readinessProbe"), notForInitContainers))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("startupProbe"), notForInitContainers))
		}
	}
	return errs
}

// ephemeralContainerFields are the EphemeralContainerCommon fields an
// ephemeral container may set; any other field set is Forbidden, so fields
// added to the API later are refused until considered.
var ephemeralContainerFields = sets.New("Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env",
	"VolumeMounts", "VolumeDevices", "TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy",
	"SecurityContext", "Stdin", "StdinOnce", "TTY")

// ephemeralForbidden is upstream's message for a field an ephemeral
// container may not set.
const ephemeralForbidden = "cannot be set for an Ephemeral Container"

// validateEphemeralContainers validates ephemeral (debug) containers: names
// unique across every container list, the common rules, a target that is a
// regular or init container, only the allowed fields set, and no subPath
// mounts.
func validateEphemeralContainers(ecs []v1.EphemeralContainer, regular, inits []v1.Container, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	targets := sets.New(containerNames(regular)...).Insert(containerNames(inits)...)
	names := targets.Clone()
	for i := range ecs {
		ec := &ecs[i]
		p := fldPath.Index(i)
		c := (*v1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(c, vols, p)...)
		if names.Has(ec.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		} else {
			names.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, forbidFieldsOutside(ec.EphemeralContainerCommon, ephemeralContainerFields, ephemeralForbidden, p)...)
		for j, m := range ec.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), ephemeralForbidden))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), ephemeralForbidden))
			}
		}
	}
	return errs
}

// forbidFieldsOutside reports, for each field of the struct value that is
// set (not its zero value) and not in allowed, a Forbidden error on the
// field's JSON-style name (the Go name with a lower-case first letter).
func forbidFieldsOutside(value any, allowed sets.Set[string], msg string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	v := reflect.ValueOf(value)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowed.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		errs = append(errs, field.Forbidden(fldPath.Child(strings.ToLower(f.Name[:1])+f.Name[1:]), msg))
	}
	return errs
}

func containerNames(cs []v1.Container) []string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}

// validateContainerCommon holds the rules every container kind shares.
func validateContainerCommon(c *v1.Container, vols map[string]v1.VolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	} else if c.Image != strings.TrimSpace(c.Image) {
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, vols, c, p.Child("volumeMounts"))...)
	errs = append(errs, validatePullPolicy(c.ImagePullPolicy, p.Child("imagePullPolicy"))...)
	errs = append(errs, validateResourceRequirements(&c.Resources, p.Child("resources"))...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, p.Child("securityContext"))...)
	switch c.TerminationMessagePolicy {
	case v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, supportedTermMsgPols))
	}
	return errs
}

func validatePullPolicy(policy v1.PullPolicy, fldPath *field.Path) field.ErrorList {
	switch policy {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, policy, supportedPullPolicies)}
	}
}

// validateContainerPorts: containerPort required and in range, hostPort in
// range when set, names valid IANA_SVC_NAMEs unique within the container,
// protocol TCP/UDP/SCTP, hostIP a valid IP.
func validateContainerPorts(ports []v1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			errs = append(errs, validatePortNum(port.ContainerPort, p.Child("containerPort"))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, validatePortNum(port.HostPort, p.Child("hostPort"))...)
		}
		if port.Protocol == "" {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if !supportedPortProtocols.Has(string(port.Protocol)) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, sets.List(supportedPortProtocols)))
		}
		if port.HostIP != "" {
			errs = append(errs, validation.IsValidIP(p.Child("hostIP"), port.HostIP)...)
		}
	}
	return errs
}

// validateEnv: names required and printable ASCII without '=' (upstream's
// relaxed env var names), and valueFrom with exactly one source and no value.
func validateEnv(vars []v1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarValueFrom(ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarValueFrom(ev v1.EnvVar, fldPath *field.Path) field.ErrorList {
	if ev.ValueFrom == nil {
		return nil
	}
	var errs field.ErrorList
	vf := ev.ValueFrom
	n := 0
	if vf.FieldRef != nil {
		n++
		errs = append(errs, validateObjectFieldSelector(vf.FieldRef, envFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateResourceFieldSelector(vf.ResourceFieldRef, true, fldPath.Child("resourceFieldRef"))...)
	}
	if vf.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if vf.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if vf.FileKeyRef != nil {
		n++
		if vf.FileKeyRef.VolumeName == "" {
			errs = append(errs, field.Required(fldPath.Child("fileKeyRef", "volumeName"), ""))
		}
		if vf.FileKeyRef.Path == "" {
			errs = append(errs, field.Required(fldPath.Child("fileKeyRef", "path"), ""))
		}
		if vf.FileKeyRef.Key == "" {
			errs = append(errs, field.Required(fldPath.Child("fileKeyRef", "key"), ""))
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateObjectFieldSelector checks a downward API fieldRef against the
// paths supported in that position.
func validateObjectFieldSelector(fs *v1.ObjectFieldSelector, supported sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if fs.APIVersion == "" {
		errs = append(errs, field.Required(fldPath.Child("apiVersion"), ""))
		return errs
	}
	if fs.FieldPath == "" {
		return append(errs, field.Required(fldPath.Child("fieldPath"), ""))
	}
	if fs.APIVersion != "v1" {
		return append(errs, field.Invalid(fldPath.Child("apiVersion"), fs.APIVersion, "unsupported API version"))
	}
	if m := subscriptedFieldPath.FindStringSubmatch(fs.FieldPath); m != nil {
		key := m[2]
		if m[1] == "labels" {
			for _, msg := range validation.IsQualifiedName(key) {
				errs = append(errs, field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, msg))
			}
		} else {
			for _, msg := range validation.IsQualifiedName(strings.ToLower(key)) {
				errs = append(errs, field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, msg))
			}
		}
		return errs
	}
	if !supported.Has(fs.FieldPath) {
		errs = append(errs, field.NotSupported(fldPath.Child("fieldPath"), fs.FieldPath, sets.List(supported)))
	}
	return errs
}

func validateResourceFieldSelector(fs *v1.ResourceFieldSelector, expectContainerName bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if expectContainerName && fs.ContainerName != "" {
		// For env vars the container defaults to the one declaring the var.
		errs = append(errs, validateDNS1123Label(fs.ContainerName, fldPath.Child("containerName"))...)
	} else if !expectContainerName && fs.ContainerName == "" {
		errs = append(errs, field.Required(fldPath.Child("containerName"), ""))
	}
	if fs.Resource == "" {
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	} else if !resourceFieldRefs.Has(fs.Resource) && !strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-") {
		errs = append(errs, field.NotSupported(fldPath.Child("resource"), fs.Resource, sets.List(resourceFieldRefs)))
	}
	if fs.Divisor.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Divisor.String(), isNegativeErrorMsg))
	}
	return errs
}

func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
		}
	}
	return errs
}

func validateEnvFrom(sources []v1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range sources {
		p := fldPath.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			if ev.ConfigMapRef.Name == "" {
				errs = append(errs, field.Required(p.Child("configMapRef", "name"), ""))
			}
		}
		if ev.SecretRef != nil {
			n++
			if ev.SecretRef.Name == "" {
				errs = append(errs, field.Required(p.Child("secretRef", "name"), ""))
			}
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// validateVolumeMounts: name required and naming a pod volume, mountPath
// required and unique, subPath/subPathExpr relative without "..", and
// Bidirectional propagation only for privileged containers.
func validateVolumeMounts(mounts []v1.VolumeMount, vols map[string]v1.VolumeSource, c *v1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		p := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, ok := vols[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, p.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case v1.MountPropagationNone, v1.MountPropagationHostToContainer:
			case v1.MountPropagationBidirectional:
				if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
					errs = append(errs, field.Forbidden(p.Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
				}
			default:
				errs = append(errs, field.NotSupported(p.Child("mountPropagation"), *m.MountPropagation, supportedPropagations))
			}
		}
	}
	return errs
}

// validateResourceRequirements: resource names valid for containers,
// quantities non-negative, requests ≤ limits (equal for resources that
// cannot be overcommitted, which also need a limit), hugepages only with
// cpu or memory.
func validateResourceRequirements(r *v1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath := fldPath.Child("limits")
	reqPath := fldPath.Child("requests")
	cpuOrMemory, hugePages := false, false
	for name, q := range r.Limits {
		p := limPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(string(name), p)...)
		errs = append(errs, validateResourceQuantityValue(string(name), q, p)...)
		if isHugePageResourceName(string(name)) {
			hugePages = true
		}
		if name == v1.ResourceCPU || name == v1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	for name, q := range r.Requests {
		p := reqPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(string(name), p)...)
		errs = append(errs, validateResourceQuantityValue(string(name), q, p)...)
		limit, hasLimit := r.Limits[name]
		switch {
		case hasLimit && q.Cmp(limit) != 0 && !overcommitAllowed(string(name)):
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case hasLimit && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !hasLimit && !overcommitAllowed(string(name)):
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if isHugePageResourceName(string(name)) {
			hugePages = true
		}
		if name == v1.ResourceCPU || name == v1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return errs
}

// overcommitAllowed: native resources (unprefixed or kubernetes.io/) except
// hugepages may have requests below limits.
func overcommitAllowed(name string) bool {
	native := !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
	return native && !isHugePageResourceName(name)
}

func validateLivenessProbe(p *v1.Probe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, fldPath)
	if p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	return errs
}

func validateReadinessProbe(p *v1.Probe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, fldPath)
	if p.TerminationGracePeriodSeconds != nil {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
	}
	return errs
}

func validateStartupProbe(p *v1.Probe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, fldPath)
	if p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	return errs
}

// validateProbe: exactly one handler, non-negative timings, and a positive
// probe-level terminationGracePeriodSeconds when set.
func validateProbe(p *v1.Probe, fldPath *field.Path) field.ErrorList {
	errs := validateHandler(handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}, fldPath)
	errs = append(errs, validateNonnegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, validateNonnegative(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, validateNonnegative(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, validateNonnegative(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, validateNonnegative(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

func validateLifecycle(l *v1.Lifecycle, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l.PostStart != nil {
		errs = append(errs, validateHandler(lifecycleHandler(l.PostStart), fldPath.Child("postStart"))...)
	}
	if l.PreStop != nil {
		errs = append(errs, validateHandler(lifecycleHandler(l.PreStop), fldPath.Child("preStop"))...)
	}
	return errs
}

// handler is the union of probe and lifecycle handler actions.
type handler struct {
	exec      *v1.ExecAction
	httpGet   *v1.HTTPGetAction
	tcpSocket *v1.TCPSocketAction
	grpc      *v1.GRPCAction
	sleep     *v1.SleepAction
}

func lifecycleHandler(h *v1.LifecycleHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

// validateHandler: exactly one action, each action valid.
func validateHandler(h handler, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(name string, set bool, validate func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, validate(fldPath.Child(name))...)
	}
	one("exec", h.exec != nil, func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	one("httpGet", h.httpGet != nil, func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if h.httpGet.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validatePortNumOrName(h.httpGet.Port, p.Child("port"))...)
		if s := h.httpGet.Scheme; s != v1.URISchemeHTTP && s != v1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(p.Child("scheme"), s, supportedHTTPSchemes))
		}
		for _, hdr := range h.httpGet.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
				errs = append(errs, field.Invalid(p.Child("httpHeaders"), hdr.Name, msg))
			}
		}
		return errs
	})
	one("tcpSocket", h.tcpSocket != nil, func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, p.Child("port"))
	})
	one("grpc", h.grpc != nil, func(p *field.Path) field.ErrorList {
		return validatePortNum(h.grpc.Port, p.Child("port"))
	})
	one("sleep", h.sleep != nil, func(p *field.Path) field.ErrorList {
		if h.sleep.Seconds < 0 {
			return field.ErrorList{field.Invalid(p.Child("seconds"), h.sleep.Seconds, isNegativeErrorMsg)}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}
