package defaults

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Pod applies upstream's defaults to a pod: the pod spec defaults (see
// PodSpec), requests copied from limits where only limits are given,
// enableServiceLinks true, and on hostNetwork pods every hostPort defaulted
// to its containerPort.
func Pod(pod *v1.Pod) {
	PodSpec(&pod.Spec)
	for i := range pod.Spec.Containers {
		requestsFromLimits(&pod.Spec.Containers[i].Resources)
	}
	for i := range pod.Spec.InitContainers {
		requestsFromLimits(&pod.Spec.InitContainers[i].Resources)
	}
	if pod.Spec.EnableServiceLinks == nil {
		enable := v1.DefaultEnableServiceLinks
		pod.Spec.EnableServiceLinks = &enable
	}
	if pod.Spec.HostNetwork {
		hostNetworkPorts(pod.Spec.Containers)
		hostNetworkPorts(pod.Spec.InitContainers)
	}
}

// PodTemplateSpec applies the defaults upstream applies to a pod template
// (those of PodSpec; the pod-only ones happen when a pod is created from it).
func PodTemplateSpec(t *v1.PodTemplateSpec) { PodSpec(&t.Spec) }

// PodSpec applies the pod spec defaults: dnsPolicy ClusterFirst,
// restartPolicy Always, an empty securityContext, terminationGracePeriodSeconds
// 30, schedulerName default-scheduler, and the defaults of every container,
// volume and probe in it.
func PodSpec(spec *v1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		period := int64(v1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &period
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	for i := range spec.Containers {
		Container(&spec.Containers[i])
	}
	for i := range spec.InitContainers {
		Container(&spec.InitContainers[i])
	}
	for i := range spec.EphemeralContainers {
		Container((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for i := range spec.Volumes {
		Volume(&spec.Volumes[i])
	}
	if spec.Resources != nil {
		resourceList(spec.Resources.Limits)
		resourceList(spec.Resources.Requests)
	}
}

// Container applies the container defaults: imagePullPolicy from the image
// tag (Always for ":latest" or no tag, IfNotPresent otherwise, including
// digest references), terminationMessagePath /dev/termination-log,
// terminationMessagePolicy File, port protocol TCP, probe and handler
// defaults, env fieldRef apiVersion v1, and resource quantities rounded up to
// milli precision.
func Container(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = PullPolicyForImage(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil {
			Probe(p)
		}
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil && h.HTTPGet != nil {
				httpGet(h.HTTPGet)
			}
		}
	}
	resourceList(c.Resources.Limits)
	resourceList(c.Resources.Requests)
}

// PullPolicyForImage is upstream's default image pull policy for an image
// reference: Always when the tag is "latest" or absent (which means latest),
// IfNotPresent for any other tag or a digest reference.
func PullPolicyForImage(image string) v1.PullPolicy {
	if ImageTag(image) == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// ImageTag returns the tag of a container image reference as the kubelet
// parses it: the explicit tag if there is one, "" for a reference pinned by
// digest only, and "latest" when neither is given.
func ImageTag(image string) string {
	name := image
	hasDigest := false
	if at := strings.Index(name, "@"); at >= 0 {
		name = name[:at]
		hasDigest = true
	}
	lastPart := name
	if slash := strings.LastIndex(name, "/"); slash >= 0 {
		lastPart = name[slash+1:]
	}
	if colon := strings.LastIndex(lastPart, ":"); colon >= 0 {
		return lastPart[colon+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

// Probe applies the probe defaults: timeoutSeconds 1, periodSeconds 10,
// successThreshold 1, failureThreshold 3, and the HTTP GET defaults.
func Probe(p *v1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		httpGet(p.HTTPGet)
	}
}

func httpGet(h *v1.HTTPGetAction) {
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

// Volume applies the volume defaults: a volume with no source becomes an
// emptyDir; secret, configMap, downwardAPI and projected volumes get
// defaultMode 0644; projected service account tokens expire after an hour;
// hostPath type defaults to "" (unset); downward API fieldRefs get apiVersion v1.
func Volume(vol *v1.Volume) {
	src := &vol.VolumeSource
	if *src == (v1.VolumeSource{}) {
		src.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = int32Ptr(v1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = int32Ptr(v1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = int32Ptr(v1.DownwardAPIVolumeSourceDefaultMode)
		}
		downwardAPIItems(src.DownwardAPI.Items)
	}
	if src.Projected != nil {
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = int32Ptr(v1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range src.Projected.Sources {
			ps := &src.Projected.Sources[i]
			if ps.ServiceAccountToken != nil && ps.ServiceAccountToken.ExpirationSeconds == nil {
				hour := int64(3600)
				ps.ServiceAccountToken.ExpirationSeconds = &hour
			}
			if ps.DownwardAPI != nil {
				downwardAPIItems(ps.DownwardAPI.Items)
			}
		}
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		unset := v1.HostPathUnset
		src.HostPath.Type = &unset
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		PersistentVolumeClaimSpec(&src.Ephemeral.VolumeClaimTemplate.Spec)
	}
}

func downwardAPIItems(items []v1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil && items[i].FieldRef.APIVersion == "" {
			items[i].FieldRef.APIVersion = "v1"
		}
	}
}

// Service applies the service defaults: sessionAffinity None (and its config
// cleared) or ClientIP with a 10800 s timeout, type ClusterIP, port protocol
// TCP and targetPort equal to port, externalTrafficPolicy Cluster for
// externally reachable services, internalTrafficPolicy Cluster, and
// allocateLoadBalancerNodePorts true for LoadBalancer services.
func Service(svc *v1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = v1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case v1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case v1.ServiceAffinityClientIP:
		if c := spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			timeout := v1.DefaultClientIPServiceAffinitySeconds
			spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}
	}
	if spec.Type == "" {
		spec.Type = v1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	externallyAccessible := spec.Type == v1.ServiceTypeLoadBalancer || spec.Type == v1.ServiceTypeNodePort ||
		(spec.Type == v1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	if externallyAccessible && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != v1.ServiceTypeExternalName {
		cluster := v1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &cluster
	}
	if spec.Type == v1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			allocate := true
			spec.AllocateLoadBalancerNodePorts = &allocate
		}
		vip := v1.LoadBalancerIPModeVIP
		for i, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP != "" && ing.IPMode == nil {
				svc.Status.LoadBalancer.Ingress[i].IPMode = &vip
			}
		}
	}
}

// Namespace applies the namespace defaults: the kubernetes.io/metadata.name
// label set to the name (when it is known) and phase Active.
func Namespace(ns *v1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[v1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = v1.NamespaceActive
	}
}

// Node applies the node defaults: allocatable equal to capacity when absent.
func Node(node *v1.Node) {
	if node.Status.Allocatable == nil && node.Status.Capacity != nil {
		node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	}
	resourceList(node.Status.Capacity)
	resourceList(node.Status.Allocatable)
}

// Secret applies the secret defaults: type Opaque.
func Secret(s *v1.Secret) {
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
}

// ConfigMap applies the configmap defaults: data is an empty map, never nil.
func ConfigMap(cm *v1.ConfigMap) {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
}

// PersistentVolume applies the persistent volume defaults: phase Pending,
// reclaim policy Retain, volume mode Filesystem.
func PersistentVolume(pv *v1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = v1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		mode := v1.PersistentVolumeFilesystem
		pv.Spec.VolumeMode = &mode
	}
	if pv.Spec.HostPath != nil && pv.Spec.HostPath.Type == nil {
		unset := v1.HostPathUnset
		pv.Spec.HostPath.Type = &unset
	}
	resourceList(pv.Spec.Capacity)
}

// PersistentVolumeClaim applies the claim defaults: phase Pending and the
// spec defaults.
func PersistentVolumeClaim(pvc *v1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = v1.ClaimPending
	}
	PersistentVolumeClaimSpec(&pvc.Spec)
}

// PersistentVolumeClaimSpec applies the claim spec defaults: volume mode
// Filesystem.
func PersistentVolumeClaimSpec(spec *v1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		mode := v1.PersistentVolumeFilesystem
		spec.VolumeMode = &mode
	}
	resourceList(spec.Resources.Requests)
	resourceList(spec.Resources.Limits)
}

// Endpoints applies the endpoints defaults: port protocol TCP.
func Endpoints(ep *v1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = v1.ProtocolTCP
			}
		}
	}
}

// requestsFromLimits copies each limit into requests where no request for
// that resource is given (pods only, as upstream).
func requestsFromLimits(r *v1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = v1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// resourceList rounds every quantity up to milli precision, as upstream does
// for API compatibility.
func resourceList(rl v1.ResourceList) {
	for name, q := range rl {
		q.RoundUp(-3)
		rl[name] = q
	}
}

func hostNetworkPorts(containers []v1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			if containers[i].Ports[j].HostPort == 0 {
				containers[i].Ports[j].HostPort = containers[i].Ports[j].ContainerPort
			}
		}
	}
}

func int32Ptr(v int32) *int32 { return &v }

// ReplicationController applies the core/v1 replication controller
// defaults: the selector and the labels, when empty, copied from the
// template's labels; replicas 1; and the pod template defaults.
func ReplicationController(rc *v1.ReplicationController) {
	if t := rc.Spec.Template; t != nil && t.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = t.Labels
		}
		if len(rc.Labels) == 0 {
			rc.Labels = t.Labels
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = int32Ptr(1)
	}
	if rc.Spec.Template != nil {
		PodTemplateSpec(rc.Spec.Template)
	}
}
