package validation

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/internal/api/defaults"
)

func ptr[T any](v T) *T { return &v }

// validPod returns a defaulted pod that passes validation.
func validPod() *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name:         "app",
				Image:        "busybox:1.36",
				Ports:        []v1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env:          []v1.EnvVar{{Name: "A", Value: "1"}},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
				Resources: v1.ResourceRequirements{
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
				},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}},
			}},
			Volumes: []v1.Volume{{Name: "data"}},
		},
	}
	defaults.Pod(pod)
	return pod
}

func TestValidPodPasses(t *testing.T) {
	checkErrors(t, ValidatePod(validPod()))
}

func TestValidatePod(t *testing.T) {
	spec := "spec"
	c0 := spec + ".containers[0]"
	for name, tc := range map[string]struct {
		mutate func(*v1.Pod)
		wants  []want
	}{
		"missing name":               {func(p *v1.Pod) { p.Name = "" }, []want{{field.ErrorTypeRequired, "metadata.name", "name or generateName is required"}}},
		"name not a subdomain":       {func(p *v1.Pod) { p.Name = "Web_1" }, []want{{field.ErrorTypeInvalid, "metadata.name", "RFC 1123 subdomain"}}},
		"missing namespace":          {func(p *v1.Pod) { p.Namespace = "" }, []want{{field.ErrorTypeRequired, "metadata.namespace", ""}}},
		"bad label":                  {func(p *v1.Pod) { p.Labels = map[string]string{"a b": "x"} }, []want{{field.ErrorTypeInvalid, "metadata.labels", "name part must consist of"}}},
		"no containers":              {func(p *v1.Pod) { p.Spec.Containers = nil }, []want{{field.ErrorTypeRequired, spec + ".containers", ""}}},
		"container name required":    {func(p *v1.Pod) { p.Spec.Containers[0].Name = "" }, []want{{field.ErrorTypeRequired, c0 + ".name", ""}}},
		"container name not a label": {func(p *v1.Pod) { p.Spec.Containers[0].Name = "App.1" }, []want{{field.ErrorTypeInvalid, c0 + ".name", "RFC 1123 label"}}},
		"duplicate container names": {func(p *v1.Pod) {
			c := p.Spec.Containers[0]
			c.Ports = nil
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, []want{{field.ErrorTypeDuplicate, spec + ".containers[1].name", ""}}},
		"init container name clashes with container": {func(p *v1.Pod) {
			c := p.Spec.Containers[0]
			c.LivenessProbe = nil
			c.Ports = nil
			p.Spec.InitContainers = []v1.Container{c}
		}, []want{{field.ErrorTypeDuplicate, spec + ".initContainers[0].name", ""}}},
		"image required": {func(p *v1.Pod) { p.Spec.Containers[0].Image = "" }, []want{{field.ErrorTypeRequired, c0 + ".image", ""}}},
		"unknown preemption policy": {func(p *v1.Pod) {
			pol := v1.PreemptionPolicy("Sometimes")
			p.Spec.PreemptionPolicy = &pol
		}, []want{{field.ErrorTypeNotSupported, spec + ".preemptionPolicy", ""}}},
		"image padded":          {func(p *v1.Pod) { p.Spec.Containers[0].Image = " busybox" }, []want{{field.ErrorTypeInvalid, c0 + ".image", "leading or trailing whitespace"}}},
		"port out of range":     {func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, []want{{field.ErrorTypeInvalid, c0 + ".ports[0].containerPort", "between 1 and 65535"}}},
		"port required":         {func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, []want{{field.ErrorTypeRequired, c0 + ".ports[0].containerPort", ""}}},
		"hostPort out of range": {func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = -1 }, []want{{field.ErrorTypeInvalid, c0 + ".ports[0].hostPort", ""}}},
		"duplicate port names": {func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: v1.ProtocolTCP})
		}, []want{{field.ErrorTypeDuplicate, c0 + ".ports[1].name", ""}}},
		"port name invalid":    {func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Name = "Http" }, []want{{field.ErrorTypeInvalid, c0 + ".ports[0].name", ""}}},
		"protocol unsupported": {func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, []want{{field.ErrorTypeNotSupported, c0 + ".ports[0].protocol", `"SCTP", "TCP", "UDP"`}}},
		"protocol required":    {func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "" }, []want{{field.ErrorTypeRequired, c0 + ".ports[0].protocol", ""}}},
		"host port conflict": {func(p *v1.Pod) {
			p.Spec.Containers[0].Ports[0].HostPort = 8080
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "b", Image: "x:1", ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile,
				Ports: []v1.ContainerPort{{ContainerPort: 90, HostPort: 8080, Protocol: v1.ProtocolTCP}}})
		}, []want{{field.ErrorTypeDuplicate, spec + ".containers[1].ports[0].hostPort", ""}}},
		"hostNetwork needs hostPort == containerPort": {func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}, []want{{field.ErrorTypeInvalid, c0 + ".ports[0].containerPort", "must match `hostPort` when `hostNetwork` is true"}}},
		"restartPolicy unsupported":      {func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []want{{field.ErrorTypeNotSupported, spec + ".restartPolicy", ""}}},
		"restartPolicy required":         {func(p *v1.Pod) { p.Spec.RestartPolicy = "" }, []want{{field.ErrorTypeRequired, spec + ".restartPolicy", ""}}},
		"dnsPolicy unsupported":          {func(p *v1.Pod) { p.Spec.DNSPolicy = "Google" }, []want{{field.ErrorTypeNotSupported, spec + ".dnsPolicy", ""}}},
		"dnsPolicy None needs dnsConfig": {func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSNone }, []want{{field.ErrorTypeRequired, spec + ".dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"}}},
		"dnsPolicy None needs a nameserver": {func(p *v1.Pod) {
			p.Spec.DNSPolicy = v1.DNSNone
			p.Spec.DNSConfig = &v1.PodDNSConfig{Searches: []string{"svc.local"}}
		}, []want{{field.ErrorTypeRequired, spec + ".dnsConfig.nameservers", "at least one DNS nameserver"}}},
		"too many nameservers and a bad one": {func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "bogus"}}
		}, []want{{field.ErrorTypeInvalid, spec + ".dnsConfig.nameservers", "must not have more than 3 nameservers"}, {field.ErrorTypeInvalid, spec + ".dnsConfig.nameservers[3]", ""}}},
		"bad search domain": {func(p *v1.Pod) { p.Spec.DNSConfig = &v1.PodDNSConfig{Searches: []string{"Bad_Domain"}} }, []want{{field.ErrorTypeInvalid, spec + ".dnsConfig.searches[0]", ""}}},
		"dns option without name": {func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Options: []v1.PodDNSConfigOption{{Value: ptr("1")}}}
		}, []want{{field.ErrorTypeRequired, spec + ".dnsConfig.options[0]", ""}}},
		"negative grace period is accepted (warned about)": {func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) }, nil},
		"activeDeadlineSeconds zero":                       {func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(0)) }, []want{{field.ErrorTypeInvalid, spec + ".activeDeadlineSeconds", "must be between 1 and 2147483647, inclusive"}}},
		"limit below request": {func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("1")
		}, []want{{field.ErrorTypeInvalid, c0 + ".resources.requests", "must be less than or equal to cpu limit of 500m"}}},
		"negative quantity": {func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("-1")
			p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("-1")
		}, []want{{field.ErrorTypeInvalid, c0 + ".resources.limits[memory]", "must be greater than or equal to 0"}, {field.ErrorTypeInvalid, c0 + ".resources.requests[memory]", "must be greater than or equal to 0"}}},
		"unknown standard resource": {func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits["gpu"] = resource.MustParse("1")
			p.Spec.Containers[0].Resources.Requests["gpu"] = resource.MustParse("1")
		}, []want{{field.ErrorTypeInvalid, c0 + ".resources.limits[gpu]", "must be a standard resource for containers"}, {field.ErrorTypeInvalid, c0 + ".resources.requests[gpu]", "must be a standard resource for containers"}}},
		"extended resource needs equal limit": {func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
		}, []want{{field.ErrorTypeRequired, c0 + ".resources.limits", "Limit must be set for non overcommitable resources"}}},
		"extended resource fractional": {func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits["example.com/gpu"] = resource.MustParse("500m")
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("500m")
		}, []want{{field.ErrorTypeInvalid, c0 + ".resources.limits[example.com/gpu]", "must be an integer"}, {field.ErrorTypeInvalid, c0 + ".resources.requests[example.com/gpu]", "must be an integer"}}},
		"volume without source": {func(p *v1.Pod) { p.Spec.Volumes[0].EmptyDir = nil }, []want{{field.ErrorTypeRequired, spec + ".volumes[0]", "must specify a volume type"}, {field.ErrorTypeNotFound, c0 + ".volumeMounts[0].name", ""}}},
		"volume with two sources": {func(p *v1.Pod) {
			p.Spec.Volumes[0].HostPath = &v1.HostPathVolumeSource{Path: "/tmp", Type: ptr(v1.HostPathUnset)}
		}, []want{{field.ErrorTypeForbidden, spec + ".volumes[0].hostPath", "may not specify more than 1 volume type"}, {field.ErrorTypeNotFound, c0 + ".volumeMounts[0].name", ""}}},
		"volume name invalid": {func(p *v1.Pod) {
			p.Spec.Volumes[0].Name = "Data"
			p.Spec.Containers[0].VolumeMounts[0].Name = "Data"
		}, []want{{field.ErrorTypeInvalid, spec + ".volumes[0].name", ""}, {field.ErrorTypeNotFound, c0 + ".volumeMounts[0].name", ""}}},
		"duplicate volume": {func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
		}, []want{{field.ErrorTypeDuplicate, spec + ".volumes[1].name", ""}}},
		"mount of unknown volume": {func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" }, []want{{field.ErrorTypeNotFound, c0 + ".volumeMounts[0].name", ""}}},
		"mount path required and unique": {func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "data", MountPath: "/data"}, v1.VolumeMount{Name: "data"})
		}, []want{{field.ErrorTypeInvalid, c0 + ".volumeMounts[1].mountPath", "must be unique"}, {field.ErrorTypeRequired, c0 + ".volumeMounts[2].mountPath", ""}}},
		"subPath escaping": {func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "../etc" }, []want{{field.ErrorTypeInvalid, c0 + ".volumeMounts[0].subPath", "must not contain '..'"}}},
		"bidirectional needs privileged": {func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].MountPropagation = ptr(v1.MountPropagationBidirectional)
		}, []want{{field.ErrorTypeForbidden, c0 + ".volumeMounts[0].mountPropagation", "only to privileged containers"}}},
		"secret volume needs name, mode in range": {func(p *v1.Pod) {
			p.Spec.Volumes[0].EmptyDir = nil
			p.Spec.Volumes[0].Secret = &v1.SecretVolumeSource{DefaultMode: ptr(int32(01000)), Items: []v1.KeyToPath{{Key: "", Path: "../x"}}}
		}, []want{{field.ErrorTypeRequired, spec + ".volumes[0].secret.secretName", ""}, {field.ErrorTypeInvalid, spec + ".volumes[0].secret.defaultMode", "0777"},
			{field.ErrorTypeRequired, spec + ".volumes[0].secret.items[0].key", ""}, {field.ErrorTypeInvalid, spec + ".volumes[0].secret.items[0].path", "'..'"},
			{field.ErrorTypeNotFound, c0 + ".volumeMounts[0].name", ""}}},
		"hostPath type unsupported": {func(p *v1.Pod) {
			p.Spec.Volumes[0].EmptyDir = nil
			p.Spec.Volumes[0].HostPath = &v1.HostPathVolumeSource{Path: "/x", Type: ptr(v1.HostPathType("Pipe"))}
		}, []want{{field.ErrorTypeNotSupported, spec + ".volumes[0].hostPath.type", ""}, {field.ErrorTypeNotFound, c0 + ".volumeMounts[0].name", ""}}},
		"configMap and pvc names": {func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes,
				v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{DefaultMode: ptr(int32(0644))}}},
				v1.Volume{Name: "pvc", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}}})
		}, []want{{field.ErrorTypeRequired, spec + ".volumes[1].configMap.name", ""}, {field.ErrorTypeRequired, spec + ".volumes[2].persistentVolumeClaim.claimName", ""}}},
		"projected token too short": {func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr(int32(0644)),
				Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t", ExpirationSeconds: ptr(int64(60))}}, {}}}}})
		}, []want{{field.ErrorTypeInvalid, spec + ".volumes[1].projected.sources[0].serviceAccountToken.expirationSeconds", "less than 10 minutes"},
			{field.ErrorTypeRequired, spec + ".volumes[1].projected.sources[1]", "must specify exactly 1 volume type"}}},
		"env name required": {func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Name = "" }, []want{{field.ErrorTypeRequired, c0 + ".env[0].name", ""}}},
		"env name with =":   {func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Name = "A=B" }, []want{{field.ErrorTypeInvalid, c0 + ".env[0].name", "other than '='"}}},
		"env value and valueFrom": {func(p *v1.Pod) {
			p.Spec.Containers[0].Env[0].ValueFrom = &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
		}, []want{{field.ErrorTypeInvalid, c0 + ".env[0].valueFrom", "may not be specified when `value` is not empty"}}},
		"env valueFrom two sources": {func(p *v1.Pod) {
			p.Spec.Containers[0].Env[0].Value = ""
			p.Spec.Containers[0].Env[0].ValueFrom = &v1.EnvVarSource{
				FieldRef:        &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"},
				ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "k"},
			}
		}, []want{{field.ErrorTypeInvalid, c0 + ".env[0].valueFrom", "may not have more than one field specified at a time"}}},
		"env fieldRef unsupported path": {func(p *v1.Pod) {
			p.Spec.Containers[0].Env[0].Value = ""
			p.Spec.Containers[0].Env[0].ValueFrom = &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.containers"}}
		}, []want{{field.ErrorTypeNotSupported, c0 + ".env[0].valueFrom.fieldRef.fieldPath", ""}}},
		"env secretKeyRef bad key": {func(p *v1.Pod) {
			p.Spec.Containers[0].Env[0].Value = ""
			p.Spec.Containers[0].Env[0].ValueFrom = &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "a/b"}}
		}, []want{{field.ErrorTypeRequired, c0 + ".env[0].valueFrom.secretKeyRef.name", ""}, {field.ErrorTypeInvalid, c0 + ".env[0].valueFrom.secretKeyRef.key", ""}}},
		"envFrom needs a source": {func(p *v1.Pod) { p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "P_"}} }, []want{{field.ErrorTypeInvalid, c0 + ".envFrom[0]", "must specify one of"}}},
		"probe without handler":  {func(p *v1.Pod) { p.Spec.Containers[0].LivenessProbe.HTTPGet = nil }, []want{{field.ErrorTypeRequired, c0 + ".livenessProbe", "must specify a handler type"}}},
		"probe with two handlers": {func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe.Exec = &v1.ExecAction{Command: []string{"true"}}
		}, []want{{field.ErrorTypeForbidden, c0 + ".livenessProbe.httpGet", "may not specify more than 1 handler type"}}},
		"liveness successThreshold must be 1": {func(p *v1.Pod) { p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2 }, []want{{field.ErrorTypeInvalid, c0 + ".livenessProbe.successThreshold", "must be 1"}}},
		"probe negative timings": {func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(0)}},
				InitialDelaySeconds: -1, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: -3, TerminationGracePeriodSeconds: ptr(int64(5))}
		}, []want{{field.ErrorTypeInvalid, c0 + ".readinessProbe.tcpSocket.port", ""}, {field.ErrorTypeInvalid, c0 + ".readinessProbe.initialDelaySeconds", ""},
			{field.ErrorTypeInvalid, c0 + ".readinessProbe.failureThreshold", ""}, {field.ErrorTypeInvalid, c0 + ".readinessProbe.terminationGracePeriodSeconds", "must not be set for readinessProbes"}}},
		"exec probe without command, bad scheme": {func(p *v1.Pod) {
			p.Spec.Containers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{}}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
			p.Spec.Containers[0].LivenessProbe.HTTPGet.Scheme = "FTP"
		}, []want{{field.ErrorTypeRequired, c0 + ".startupProbe.exec.command", ""}, {field.ErrorTypeNotSupported, c0 + ".livenessProbe.httpGet.scheme", ""}}},
		"init container probes forbidden": {func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "x:1", ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile,
				LivenessProbe: p.Spec.Containers[0].LivenessProbe, Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"x"}}}}}}
		}, []want{{field.ErrorTypeForbidden, spec + ".initContainers[0].livenessProbe", "without restartPolicy=Always"}, {field.ErrorTypeForbidden, spec + ".initContainers[0].lifecycle", ""}}},
		"sidecar allowed probes, init restartPolicy Never unsupported": {func(p *v1.Pod) {
			base := v1.Container{Image: "x:1", ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile}
			side, bad := base, base
			side.Name, side.RestartPolicy, side.LivenessProbe = "side", ptr(v1.ContainerRestartPolicyAlways), p.Spec.Containers[0].LivenessProbe
			bad.Name, bad.RestartPolicy = "bad", ptr(v1.ContainerRestartPolicy("Never"))
			p.Spec.InitContainers = []v1.Container{side, bad}
		}, []want{{field.ErrorTypeNotSupported, spec + ".initContainers[1].restartPolicy", ""}}},
		"container restartPolicy forbidden": {func(p *v1.Pod) { p.Spec.Containers[0].RestartPolicy = ptr(v1.ContainerRestartPolicyAlways) }, []want{{field.ErrorTypeForbidden, c0 + ".restartPolicy", "non-init containers"}}},
		"pull policy unsupported":           {func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, []want{{field.ErrorTypeNotSupported, c0 + ".imagePullPolicy", ""}}},
		"termination message policy":        {func(p *v1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Stdout" }, []want{{field.ErrorTypeNotSupported, c0 + ".terminationMessagePolicy", ""}}},
		"security context": {func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr(int64(-5)), Privileged: ptr(true), AllowPrivilegeEscalation: ptr(false)}
			p.Spec.SecurityContext.FSGroup = ptr(int64(-1))
			p.Spec.SecurityContext.SupplementalGroups = []int64{1, -2}
			p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "net.ipv4.ip_forward"}, {Name: "Bad Name"}, {Name: "net.ipv4.ip_forward"}}
		}, []want{{field.ErrorTypeInvalid, c0 + ".securityContext.runAsUser", ""}, {field.ErrorTypeInvalid, c0 + ".securityContext", "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"},
			{field.ErrorTypeInvalid, spec + ".securityContext.fsGroup", ""}, {field.ErrorTypeInvalid, spec + ".securityContext.supplementalGroups[1]", ""},
			{field.ErrorTypeInvalid, spec + ".securityContext.sysctls[1].name", ""}, {field.ErrorTypeDuplicate, spec + ".securityContext.sysctls[2].name", ""}}},
		"seccomp localhost without profile": {func(p *v1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}
		}, []want{{field.ErrorTypeRequired, spec + ".securityContext.seccompProfile.localhostProfile", ""}}},
		"shareProcessNamespace with hostPID": {func(p *v1.Pod) { p.Spec.HostPID = true; p.Spec.ShareProcessNamespace = ptr(true) }, []want{{field.ErrorTypeInvalid, spec + ".shareProcessNamespace", "cannot both be enabled"}}},
		"nodeSelector invalid":               {func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ss d"} }, []want{{field.ErrorTypeInvalid, spec + ".nodeSelector", ""}}},
		"nodeName invalid":                   {func(p *v1.Pod) { p.Spec.NodeName = "Node_1" }, []want{{field.ErrorTypeInvalid, spec + ".nodeName", ""}}},
		"serviceAccountName invalid":         {func(p *v1.Pod) { p.Spec.ServiceAccountName = "SA!" }, []want{{field.ErrorTypeInvalid, spec + ".serviceAccountName", ""}}},
		"hostname and subdomain":             {func(p *v1.Pod) { p.Spec.Hostname = "a.b"; p.Spec.Subdomain = "X" }, []want{{field.ErrorTypeInvalid, spec + ".hostname", ""}, {field.ErrorTypeInvalid, spec + ".subdomain", ""}}},
		"tolerations": {func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{
				{Key: "", Operator: v1.TolerationOpEqual},
				{Key: "k", Operator: v1.TolerationOpExists, Value: "v"},
				{Key: "k", Operator: "Like"},
				{Key: "k", Effect: v1.TaintEffectNoSchedule, TolerationSeconds: ptr(int64(3))},
				{Key: "k", Effect: "Never"},
				{Key: "bad key!"},
			}
		}, []want{{field.ErrorTypeInvalid, spec + ".tolerations[0].operator", "operator must be Exists when `key` is empty"},
			{field.ErrorTypeInvalid, spec + ".tolerations[1].operator", "value must be empty when `operator` is 'Exists'"},
			{field.ErrorTypeNotSupported, spec + ".tolerations[2].operator", ""},
			{field.ErrorTypeInvalid, spec + ".tolerations[3].effect", "effect must be 'NoExecute' when `tolerationSeconds` is set"},
			{field.ErrorTypeNotSupported, spec + ".tolerations[4].effect", ""},
			{field.ErrorTypeInvalid, spec + ".tolerations[5].key", ""}}},
		"node affinity": {func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
					{Key: "a", Operator: v1.NodeSelectorOpIn},
					{Key: "b", Operator: v1.NodeSelectorOpExists, Values: []string{"x"}},
					{Key: "c", Operator: v1.NodeSelectorOpGt, Values: []string{"1", "2"}},
					{Key: "d", Operator: "Near"},
				}}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 0}},
			}}
		}, []want{{field.ErrorTypeRequired, spec + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values", ""},
			{field.ErrorTypeForbidden, spec + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values", ""},
			{field.ErrorTypeRequired, spec + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values", ""},
			{field.ErrorTypeInvalid, spec + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].operator", ""},
			{field.ErrorTypeInvalid, spec + ".affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "must be in the range 1-100"}}},
		"empty node selector terms": {func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{}}}
		}, []want{{field.ErrorTypeRequired, spec + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "at least one node selector term"}}},
		"pod anti-affinity topologyKey": {func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{}}}}
		}, []want{{field.ErrorTypeRequired, spec + ".affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "can not be empty"}}},
		"topology spread": {func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: "Maybe"}}
		}, []want{{field.ErrorTypeInvalid, spec + ".topologySpreadConstraints[0].maxSkew", ""}, {field.ErrorTypeNotSupported, spec + ".topologySpreadConstraints[0].whenUnsatisfiable", ""}}},
		"ephemeral containers on create": {func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "x:1", ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile}}}
		}, []want{{field.ErrorTypeForbidden, spec + ".ephemeralContainers", "cannot be set on create"}}},
		"pod-level resources": {func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), "ephemeral-storage": resource.MustParse("1Gi")},
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), "ephemeral-storage": resource.MustParse("1Gi")}}
		}, []want{{field.ErrorTypeNotSupported, spec + ".resources.limits[ephemeral-storage]", ""}, {field.ErrorTypeNotSupported, spec + ".resources.requests[ephemeral-storage]", ""},
			{field.ErrorTypeInvalid, spec + ".resources.requests", "must be less than or equal to cpu limit of 1"}}},
		"imagePullSecrets name": {func(p *v1.Pod) { p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{}} }, []want{{field.ErrorTypeRequired, spec + ".imagePullSecrets[0].name", ""}}},
		"hostAliases":           {func(p *v1.Pod) { p.Spec.HostAliases = []v1.HostAlias{{IP: "x", Hostnames: []string{"A_B"}}} }, []want{{field.ErrorTypeInvalid, spec + ".hostAliases[0].ip", ""}, {field.ErrorTypeInvalid, spec + ".hostAliases[0].hostnames[0]", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := validPod()
			tc.mutate(pod)
			checkErrors(t, ValidatePod(pod), tc.wants...)
		})
	}
}

func TestValidatePodUpdate(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(newPod *v1.Pod)
		old    func(oldPod *v1.Pod)
		wants  []want
	}{
		"image change allowed":  {mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "busybox:1.37" }},
		"labels change allowed": {mutate: func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} }},
		"toleration added allowed": {mutate: func(p *v1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: "k", Operator: v1.TolerationOpExists})
		}},
		"activeDeadlineSeconds lowered":      {old: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(100)) }, mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(50)) }},
		"negative grace may become 1":        {old: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) }, mutate: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(1)) }},
		"scheduling gate removal allowed":    {old: func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g"}} }, mutate: func(p *v1.Pod) { p.Spec.SchedulingGates = nil }},
		"scheduling gate addition forbidden": {mutate: func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g"}} }, wants: []want{{field.ErrorTypeForbidden, "spec.schedulingGates[0].name", "only deletion is allowed, but found new scheduling gate 'g'"}}},
		"gated pod may add node selector": {old: func(p *v1.Pod) {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g"}}
			p.Spec.NodeSelector = map[string]string{"a": "1"}
		}, mutate: func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"a": "1", "b": "2"} }},
		"gated pod may not change node selector": {old: func(p *v1.Pod) {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g"}}
			p.Spec.NodeSelector = map[string]string{"a": "1"}
		}, mutate: func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"a": "2"} }, wants: []want{{field.ErrorTypeInvalid, "spec.nodeSelector", "only additions"}}},
		"ungated pod may not add node selector": {mutate: func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"b": "2"} }, wants: []want{{field.ErrorTypeForbidden, "spec", "NodeSelector"}}},
		"activeDeadlineSeconds raised":          {old: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(100)) }, mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(200)) }, wants: []want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds", "must be less than or equal to previous value"}}},
		"activeDeadlineSeconds unset":           {old: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(100)) }, mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }, wants: []want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds", "must not update from a positive integer to nil value"}}},
		"container added": {mutate: func(p *v1.Pod) {
			c := p.Spec.Containers[0]
			c.Name = "b"
			c.Ports = nil
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, wants: []want{{field.ErrorTypeForbidden, "spec.containers", "may not add or remove containers"}}},
		"toleration modified":     {old: func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}} }, mutate: func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "j", Operator: v1.TolerationOpExists}} }, wants: []want{{field.ErrorTypeForbidden, "spec.tolerations", "existing toleration can not be modified"}}},
		"other spec field":        {mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 81 }, wants: []want{{field.ErrorTypeForbidden, "spec", "pod updates may not change fields other than `spec.containers[*].image`"}}},
		"nodeName change":         {mutate: func(p *v1.Pod) { p.Spec.NodeName = "n1" }, wants: []want{{field.ErrorTypeForbidden, "spec", "NodeName"}}},
		"name change":             {mutate: func(p *v1.Pod) { p.Name = "other" }, wants: []want{{field.ErrorTypeInvalid, "metadata.name", "field is immutable"}}},
		"new pod must stay valid": {mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "" }, wants: []want{{field.ErrorTypeRequired, "spec.containers[0].image", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			oldPod := validPod()
			oldPod.ResourceVersion = "1"
			if tc.old != nil {
				tc.old(oldPod)
			}
			newPod := oldPod.DeepCopy()
			tc.mutate(newPod)
			checkErrors(t, ValidatePodUpdate(newPod, oldPod), tc.wants...)
		})
	}
}

func TestValidatePodUpdateMessageHasDiff(t *testing.T) {
	oldPod := validPod()
	oldPod.ResourceVersion = "1"
	newPod := oldPod.DeepCopy()
	newPod.Spec.RestartPolicy = v1.RestartPolicyNever
	errs := ValidatePodUpdate(newPod, oldPod)
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, `"Always"`) || !strings.Contains(errs[0].Detail, `"Never"`) {
		t.Fatalf("want one Forbidden error with a diff showing Always→Never, got %v", errs)
	}
}

func TestValidatePodStatusUpdate(t *testing.T) {
	terminated := func(code int32) v1.ContainerStatus {
		return v1.ContainerStatus{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	running := v1.ContainerStatus{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	for name, tc := range map[string]struct {
		policy   v1.RestartPolicy
		old, new func(*v1.Pod)
		wants    []want
	}{
		"phase and IPs": {new: func(p *v1.Pod) {
			p.Status.Phase = v1.PodRunning
			p.Status.PodIP = "10.0.0.5"
			p.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.5"}}
		}},
		"nodeName may not change": {new: func(p *v1.Pod) { p.Spec.NodeName = "n2" }, wants: []want{{field.ErrorTypeForbidden, "status.nodeName", "may not be changed directly"}}},
		"bad nominatedNodeName":   {new: func(p *v1.Pod) { p.Status.NominatedNodeName = "N_1" }, wants: []want{{field.ErrorTypeInvalid, "status.nominatedNodeName", ""}}},
		"qosClass immutable":      {old: func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBurstable }, new: func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBestEffort }, wants: []want{{field.ErrorTypeInvalid, "status.qosClass", "field is immutable"}}},
		"bad pod IP":              {new: func(p *v1.Pod) { p.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.300"}} }, wants: []want{{field.ErrorTypeInvalid, "status.podIPs[0]", ""}}},
		"two IPv4 pod IPs":        {new: func(p *v1.Pod) { p.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}} }, wants: []want{{field.ErrorTypeInvalid, "status.podIPs", "one IP for each IP family"}}},
		"dual stack ok":           {new: func(p *v1.Pod) { p.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}} }},
		"custom condition type invalid": {new: func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: "bad type!", Status: v1.ConditionTrue}}
		}, wants: []want{{field.ErrorTypeInvalid, "status.conditions[0].type", ""}}},
		"Never: terminated stays terminated": {policy: v1.RestartPolicyNever, old: func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{terminated(0)} },
			new: func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{running} }, wants: []want{{field.ErrorTypeForbidden, "status.containerStatuses[0].state", "may not be transitioned to non-terminated state"}}},
		"OnFailure: failed may restart": {policy: v1.RestartPolicyOnFailure, old: func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{terminated(1)} },
			new: func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{running} }},
		"OnFailure: succeeded may not restart": {policy: v1.RestartPolicyOnFailure, old: func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{terminated(0)} },
			new: func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{running} }, wants: []want{{field.ErrorTypeForbidden, "status.containerStatuses[0].state", ""}}},
		"Always: may restart": {policy: v1.RestartPolicyAlways, old: func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{terminated(0)} },
			new: func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{running} }},
	} {
		t.Run(name, func(t *testing.T) {
			oldPod := validPod()
			oldPod.ResourceVersion = "1"
			if tc.policy != "" {
				oldPod.Spec.RestartPolicy = tc.policy
			}
			if tc.old != nil {
				tc.old(oldPod)
			}
			newPod := oldPod.DeepCopy()
			tc.new(newPod)
			checkErrors(t, ValidatePodStatusUpdate(newPod, oldPod), tc.wants...)
		})
	}
}

func TestValidatePodBinding(t *testing.T) {
	checkErrors(t, ValidatePodBinding(&v1.Binding{Target: v1.ObjectReference{Kind: "Node", Name: "n1"}}))
	checkErrors(t, ValidatePodBinding(&v1.Binding{Target: v1.ObjectReference{Name: "n1"}}))
	checkErrors(t, ValidatePodBinding(&v1.Binding{Target: v1.ObjectReference{Kind: "Pod"}}),
		want{field.ErrorTypeNotSupported, "target.kind", ""}, want{field.ErrorTypeRequired, "target.name", ""})
}

// BenchmarkValidatePod measures the validation cost the apiserver pays per
// pod create.
func BenchmarkValidatePod(b *testing.B) {
	pod := validPod()
	b.ReportAllocs()
	for b.Loop() {
		if errs := ValidatePod(pod); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
