package validation

import (
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits upstream enforces on pod DNS configuration.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

var (
	supportedRestartPolicies = []string{string(v1.RestartPolicyAlways), string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever)}
	supportedDNSPolicies     = []string{string(v1.DNSClusterFirstWithHostNet), string(v1.DNSClusterFirst), string(v1.DNSDefault), string(v1.DNSNone)}
	supportedPortProtocols   = sets.New(string(v1.ProtocolTCP), string(v1.ProtocolUDP), string(v1.ProtocolSCTP))
)

// ValidatePodName checks a pod name (a DNS-1123 subdomain).
var ValidatePodName = apimachineryvalidation.NameIsDNSSubdomain

// ValidatePod validates a pod about to be created: its metadata (namespaced,
// DNS-1123 subdomain name), its spec, and the create-only rules
// (ephemeralContainers cannot be set, host ports must not conflict).
func ValidatePod(pod *v1.Pod) field.ErrorList {
	fldPath := field.NewPath("metadata")
	errs := apimachineryvalidation.ValidateObjectMeta(&pod.ObjectMeta, true, ValidatePodName, fldPath)
	specPath := field.NewPath("spec")
	errs = append(errs, ValidatePodSpec(&pod.Spec, specPath)...)
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	return errs
}

// ValidatePodTemplateSpec validates a pod template (in a ReplicaSet or
// Deployment): its labels and annotations and the pod spec.
func ValidatePodTemplateSpec(spec *v1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	metaPath := fldPath.Child("metadata")
	errs := metav1validation.ValidateLabels(spec.Labels, metaPath.Child("labels"))
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(spec.Annotations, metaPath.Child("annotations"))...)
	specPath := fldPath.Child("spec")
	errs = append(errs, ValidatePodSpec(&spec.Spec, specPath)...)
	if len(spec.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// ValidatePodSpec validates a pod spec: containers and init containers,
// volumes, restart and DNS policy, DNS config, host network rules, node
// selector, security context, affinity, tolerations, and the scalar fields.
func ValidatePodSpec(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	vols, errs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	errs = append(errs, validateContainers(spec.Containers, vols, fldPath.Child("containers"))...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, vols, fldPath.Child("initContainers"))...)
	errs = append(errs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, vols, fldPath.Child("ephemeralContainers"))...)
	errs = append(errs, validateHostNetwork(spec, fldPath.Child("containers"), fldPath.Child("initContainers"))...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(spec.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec.SecurityContext, fldPath.Child("securityContext"))...)
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(fldPath.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	errs = append(errs, validateImagePullSecrets(spec.ImagePullSecrets, fldPath.Child("imagePullSecrets"))...)
	errs = append(errs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	errs = append(errs, validateReadinessGates(spec.ReadinessGates, fldPath.Child("readinessGates"))...)
	errs = append(errs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	errs = append(errs, validateHostAliases(spec.HostAliases, fldPath.Child("hostAliases"))...)
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)

	if spec.ServiceAccountName != "" {
		for _, msg := range DNSSubdomainName(spec.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	if spec.NodeName != "" {
		errs = append(errs, validateNodeName(spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		errs = append(errs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	if spec.PriorityClassName != "" {
		for _, msg := range DNSSubdomainName(spec.PriorityClassName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("priorityClassName"), spec.PriorityClassName, msg))
		}
	}
	if spec.PreemptionPolicy != nil {
		errs = append(errs, validatePreemptionPolicy(spec.PreemptionPolicy, fldPath.Child("preemptionPolicy"))...)
	}
	if spec.RuntimeClassName != nil {
		for _, msg := range DNSSubdomainName(*spec.RuntimeClassName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("runtimeClassName"), *spec.RuntimeClassName, msg))
		}
	}
	if spec.SchedulerName != "" {
		for _, msg := range DNSSubdomainName(spec.SchedulerName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("schedulerName"), spec.SchedulerName, msg))
		}
	}
	if spec.OS != nil {
		if spec.OS.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("os", "name"), ""))
		} else if spec.OS.Name != v1.Linux && spec.OS.Name != v1.Windows {
			errs = append(errs, field.NotSupported(fldPath.Child("os", "name"), spec.OS.Name, []string{string(v1.Linux), string(v1.Windows)}))
		}
	}
	errs = append(errs, validateOverhead(spec.Overhead, fldPath.Child("overhead"))...)
	if spec.Resources != nil {
		errs = append(errs, validatePodResources(spec.Resources, fldPath.Child("resources"))...)
	}
	return errs
}

// podLevelResources are the resources pod-level requests and limits may name.
var podLevelResources = sets.New(string(v1.ResourceCPU), string(v1.ResourceMemory))

// validatePodResources checks pod-level resources: only cpu, memory and
// hugepages, with the container rules for quantities and requests ≤ limits.
func validatePodResources(r *v1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, part := range []struct {
		name string
		list v1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for name := range part.list {
			if !podLevelResources.Has(string(name)) && !isHugePageResourceName(string(name)) {
				errs = append(errs, field.NotSupported(fldPath.Child(part.name).Key(string(name)), name, []string{"cpu", "memory", "hugepages-*"}))
			}
		}
	}
	return append(errs, validateResourceRequirements(r, fldPath)...)
}

func validateRestartPolicy(p v1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, supportedRestartPolicies)}
	}
}

func validateDNSPolicy(p v1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, supportedDNSPolicies)}
	}
}

func validatePodDNSConfig(cfg *v1.PodDNSConfig, policy v1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy == v1.DNSNone {
		if cfg == nil {
			return append(errs, field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", v1.DNSNone)))
		}
		if len(cfg.Nameservers) == 0 {
			errs = append(errs, field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", v1.DNSNone)))
		}
	}
	if cfg == nil {
		return errs
	}
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if n := len(strings.Join(cfg.Searches, " ")); n > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range cfg.Searches {
		if search == "." {
			continue
		}
		errs = append(errs, validateDNS1123Subdomain(strings.TrimSuffix(search, "."), fldPath.Child("searches").Index(i))...)
	}
	for i, opt := range cfg.Options {
		if opt.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// validateHostNetwork: with hostNetwork every container port's hostPort must
// equal its containerPort (defaulting sets it when unset).
func validateHostNetwork(spec *v1.PodSpec, containersPath, initPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	check := func(containers []v1.Container, p *field.Path) {
		for i, c := range containers {
			for j, port := range c.Ports {
				if port.HostPort != port.ContainerPort {
					errs = append(errs, field.Invalid(p.Index(i).Child("ports").Index(j).Child("containerPort"), port.ContainerPort, "must match `hostPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	check(spec.Containers, containersPath)
	check(spec.InitContainers, initPath)
	return errs
}

// validateHostPortConflicts rejects two container ports claiming the same
// hostPort/protocol/hostIP.
func validateHostPortConflicts(containers []v1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range containers {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(fldPath.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return errs
}

func validateImagePullSecrets(secrets []v1.LocalObjectReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range secrets {
		if s.Name == "" {
			errs = append(errs, field.Required(fldPath.Index(i).Child("name"), ""))
		}
	}
	return errs
}

func validateReadinessGates(gates []v1.PodReadinessGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, g := range gates {
		errs = append(errs, validateQualifiedName(string(g.ConditionType), fldPath.Index(i).Child("conditionType"))...)
	}
	return errs
}

func validateHostAliases(aliases []v1.HostAlias, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range aliases {
		p := fldPath.Index(i)
		if a.IP == "" {
			errs = append(errs, field.Required(p.Child("ip"), ""))
		} else {
			errs = append(errs, validation.IsValidIP(p.Child("ip"), a.IP)...)
		}
		for j, h := range a.Hostnames {
			errs = append(errs, validateDNS1123Subdomain(h, p.Child("hostnames").Index(j))...)
		}
	}
	return errs
}

func validateSchedulingGates(gates []v1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, g := range gates {
		errs = append(errs, validateQualifiedName(g.Name, fldPath.Index(i))...)
		if seen.Has(g.Name) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), g.Name))
		}
		seen.Insert(g.Name)
	}
	return errs
}

func validateOverhead(overhead v1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range overhead {
		p := fldPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(string(name), p)...)
		errs = append(errs, validateResourceQuantityValue(string(name), q, p)...)
	}
	return errs
}

// ValidatePodTemplate validates a core/v1 PodTemplate: its metadata (a
// pod name) and the template, as a ReplicaSet's.
func ValidatePodTemplate(t *v1.PodTemplate) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&t.ObjectMeta, true, ValidatePodName, metadataPath)
	return append(errs, ValidatePodTemplateSpec(&t.Template, field.NewPath("template"))...)
}

// ValidatePodTemplateUpdate validates a PodTemplate update: any valid
// template may replace another.
func ValidatePodTemplateUpdate(newT, oldT *v1.PodTemplate) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newT.ObjectMeta, &oldT.ObjectMeta, metadataPath)
	return append(errs, ValidatePodTemplateSpec(&newT.Template, field.NewPath("template"))...)
}
