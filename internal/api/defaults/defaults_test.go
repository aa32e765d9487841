package defaults

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPullPolicyForImage(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"busybox":                          v1.PullAlways,
		"busybox:latest":                   v1.PullAlways,
		"busybox:1.36":                     v1.PullIfNotPresent,
		"127.0.0.1:5000/busybox":           v1.PullAlways,
		"127.0.0.1:5000/busybox:1.36":      v1.PullIfNotPresent,
		"registry.k8s.io/pause@sha256:abc": v1.PullIfNotPresent,
		"repo/img:latest@sha256:abc":       v1.PullAlways,
	} {
		if got := PullPolicyForImage(image); got != want {
			t.Errorf("PullPolicyForImage(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestPodDefaults(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		HostNetwork: true,
		Containers: []v1.Container{{
			Name: "c", Image: "nginx:1.25",
			Ports:          []v1.ContainerPort{{ContainerPort: 8080}},
			Resources:      v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}},
			Env:            []v1.EnvVar{{Name: "N", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(8080)}}},
		}},
		InitContainers: []v1.Container{{Name: "i", Image: "busybox"}},
		Volumes: []v1.Volume{
			{Name: "empty"},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
			{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
			{Name: "hp", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}},
			{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}}}}}},
		},
	}}
	Pod(pod)
	s := pod.Spec
	c := s.Containers[0]
	checks := map[string]bool{
		"restartPolicy Always":        s.RestartPolicy == v1.RestartPolicyAlways,
		"dnsPolicy ClusterFirst":      s.DNSPolicy == v1.DNSClusterFirst,
		"grace 30":                    *s.TerminationGracePeriodSeconds == 30,
		"schedulerName":               s.SchedulerName == "default-scheduler",
		"securityContext set":         s.SecurityContext != nil,
		"enableServiceLinks true":     s.EnableServiceLinks != nil && *s.EnableServiceLinks,
		"pull policy from tag":        c.ImagePullPolicy == v1.PullIfNotPresent,
		"init pull policy untagged":   s.InitContainers[0].ImagePullPolicy == v1.PullAlways,
		"termination message path":    c.TerminationMessagePath == "/dev/termination-log",
		"termination message policy":  c.TerminationMessagePolicy == v1.TerminationMessageReadFile,
		"port protocol TCP":           c.Ports[0].Protocol == v1.ProtocolTCP,
		"hostNetwork hostPort":        c.Ports[0].HostPort == 8080,
		"requests from limits cpu":    c.Resources.Requests.Cpu().Equal(resource.MustParse("1")),
		"requests from limits memory": c.Resources.Requests.Memory().Equal(resource.MustParse("1Gi")),
		"fieldRef apiVersion":         c.Env[0].ValueFrom.FieldRef.APIVersion == "v1",
		"probe timeout":               c.ReadinessProbe.TimeoutSeconds == 1,
		"probe period":                c.ReadinessProbe.PeriodSeconds == 10,
		"probe success":               c.ReadinessProbe.SuccessThreshold == 1,
		"probe failure":               c.ReadinessProbe.FailureThreshold == 3,
		"httpGet path":                c.ReadinessProbe.HTTPGet.Path == "/",
		"httpGet scheme":              c.ReadinessProbe.HTTPGet.Scheme == v1.URISchemeHTTP,
		"empty volume is emptyDir":    s.Volumes[0].EmptyDir != nil,
		"secret defaultMode 0644":     *s.Volumes[1].Secret.DefaultMode == 0644,
		"configMap defaultMode 0644":  *s.Volumes[2].ConfigMap.DefaultMode == 0644,
		"hostPath type unset":         s.Volumes[3].HostPath.Type != nil && *s.Volumes[3].HostPath.Type == v1.HostPathUnset,
		"projected defaultMode":       *s.Volumes[4].Projected.DefaultMode == 0644,
		"token expiration 1h":         *s.Volumes[4].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds == 3600,
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("%s: not defaulted as upstream does", name)
		}
	}
	again := pod.DeepCopy()
	Pod(again)
	if !equality.Semantic.DeepEqual(pod, again) {
		t.Errorf("Pod defaulting is not idempotent")
	}
}

func TestPodKeepsExplicitValues(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy: v1.RestartPolicyNever, DNSPolicy: v1.DNSDefault, TerminationGracePeriodSeconds: new(int64),
		Containers: []v1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: v1.PullNever,
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}, Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}},
	}}
	Pod(pod)
	if pod.Spec.RestartPolicy != v1.RestartPolicyNever || pod.Spec.DNSPolicy != v1.DNSDefault || *pod.Spec.TerminationGracePeriodSeconds != 0 {
		t.Errorf("explicit spec values overwritten: %+v", pod.Spec)
	}
	if pod.Spec.Containers[0].ImagePullPolicy != v1.PullNever {
		t.Errorf("explicit pull policy overwritten")
	}
	if got := pod.Spec.Containers[0].Resources.Requests.Cpu(); !got.Equal(resource.MustParse("100m")) {
		t.Errorf("explicit request overwritten: %v", got)
	}
}

func TestServiceDefaults(t *testing.T) {
	svc := &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80}, {Port: 443, TargetPort: intstr.FromString("https")}}}}
	Service(svc)
	if svc.Spec.SessionAffinity != v1.ServiceAffinityNone || svc.Spec.Ports[0].Protocol != v1.ProtocolTCP ||
		svc.Spec.Ports[0].TargetPort != intstr.FromInt32(80) || svc.Spec.Ports[1].TargetPort != intstr.FromString("https") ||
		svc.Spec.ExternalTrafficPolicy != v1.ServiceExternalTrafficPolicyCluster ||
		svc.Spec.InternalTrafficPolicy == nil || *svc.Spec.InternalTrafficPolicy != v1.ServiceInternalTrafficPolicyCluster ||
		svc.Spec.AllocateLoadBalancerNodePorts == nil || !*svc.Spec.AllocateLoadBalancerNodePorts {
		t.Errorf("service not defaulted as upstream: %+v", svc.Spec)
	}
	plain := &v1.Service{Spec: v1.ServiceSpec{SessionAffinity: v1.ServiceAffinityClientIP}}
	Service(plain)
	if plain.Spec.Type != v1.ServiceTypeClusterIP || plain.Spec.ExternalTrafficPolicy != "" ||
		*plain.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != v1.DefaultClientIPServiceAffinitySeconds {
		t.Errorf("ClusterIP service not defaulted as upstream: %+v", plain.Spec)
	}
}

func TestOtherDefaults(t *testing.T) {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	Namespace(ns)
	if ns.Labels[v1.LabelMetadataName] != "team" || ns.Status.Phase != v1.NamespaceActive {
		t.Errorf("namespace: %+v", ns)
	}
	sec := &v1.Secret{}
	Secret(sec)
	if sec.Type != v1.SecretTypeOpaque {
		t.Errorf("secret type %q", sec.Type)
	}
	node := &v1.Node{Status: v1.NodeStatus{Capacity: v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}}}
	Node(node)
	if node.Status.Allocatable.Pods().Value() != 110 {
		t.Errorf("node allocatable %v", node.Status.Allocatable)
	}
	pv := &v1.PersistentVolume{}
	PersistentVolume(pv)
	if pv.Status.Phase != v1.VolumePending || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != v1.PersistentVolumeFilesystem {
		t.Errorf("pv %+v", pv)
	}
	pvc := &v1.PersistentVolumeClaim{}
	PersistentVolumeClaim(pvc)
	if pvc.Status.Phase != v1.ClaimPending || *pvc.Spec.VolumeMode != v1.PersistentVolumeFilesystem {
		t.Errorf("pvc %+v", pvc)
	}

	d := &appsv1.Deployment{}
	Deployment(d)
	ru := d.Spec.Strategy.RollingUpdate
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru.MaxSurge.String() != "25%" ||
		ru.MaxUnavailable.String() != "25%" || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 ||
		d.Spec.Template.Spec.RestartPolicy != v1.RestartPolicyAlways {
		t.Errorf("deployment %+v", d.Spec)
	}
	recreate := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	Deployment(recreate)
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate deployment got rollingUpdate defaults")
	}
	rs := &appsv1.ReplicaSet{}
	ReplicaSet(rs)
	if *rs.Spec.Replicas != 1 {
		t.Errorf("replicaset replicas %v", *rs.Spec.Replicas)
	}
	sc := &storagev1.StorageClass{}
	StorageClass(sc)
	if *sc.ReclaimPolicy != v1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("storageclass %+v", sc)
	}
	drv := &storagev1.CSIDriver{}
	CSIDriver(drv)
	if !*drv.Spec.AttachRequired || *drv.Spec.PodInfoOnMount || *drv.Spec.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy ||
		len(drv.Spec.VolumeLifecycleModes) != 1 || drv.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("csidriver %+v", drv.Spec)
	}
	es := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{}}}
	EndpointSlice(es)
	if *es.Ports[0].Name != "" || *es.Ports[0].Protocol != v1.ProtocolTCP {
		t.Errorf("endpointslice ports %+v", es.Ports)
	}
	rb := &rbacv1.RoleBinding{Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}, {Kind: "ServiceAccount", Name: "sa"}}}
	RoleBinding(rb)
	if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName || rb.Subjects[1].APIGroup != "" {
		t.Errorf("rolebinding %+v", rb)
	}
}
