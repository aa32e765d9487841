package validation

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/internal/api/defaults"
)

var meta = metav1.ObjectMeta{Name: "x", Namespace: "default", ResourceVersion: "1"}
var clusterMeta = metav1.ObjectMeta{Name: "x", ResourceVersion: "1"}

func TestValidateNamespace(t *testing.T) {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	checkErrors(t, ValidateNamespace(ns))
	checkErrors(t, ValidateNamespace(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}}), want{field.ErrorTypeInvalid, "metadata.name", "must not contain dots"})
	checkErrors(t, ValidateNamespace(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1.NamespaceSpec{Finalizers: []v1.FinalizerName{"kubernetes", "mine"}}}),
		want{field.ErrorTypeInvalid, "spec.finalizers[1]", "neither a standard finalizer name nor is it fully qualified"})
	old := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceActive}}
	upd := old.DeepCopy()
	upd.Status.Phase = v1.NamespaceTerminating
	checkErrors(t, ValidateNamespaceStatusUpdate(upd, old), want{field.ErrorTypeInvalid, "status.Phase", "may only be 'Active' if `deletionTimestamp` is empty"})
	deleting := old.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	upd = deleting.DeepCopy()
	upd.Status.Phase = v1.NamespaceTerminating
	checkErrors(t, ValidateNamespaceStatusUpdate(upd, deleting))
}

func TestValidateNode(t *testing.T) {
	n := &v1.Node{ObjectMeta: clusterMeta, Spec: v1.NodeSpec{PodCIDRs: []string{"10.1.0.0/24"}},
		Status: v1.NodeStatus{Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}
	checkErrors(t, ValidateNode(n))
	bad := n.DeepCopy()
	bad.Spec.PodCIDRs = []string{"10.1.0.0/33"}
	bad.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}, {Key: "k", Effect: v1.TaintEffectNoSchedule}, {Key: "k2"}, {Key: "bad key", Effect: "Sometimes"}}
	bad.Status.Capacity[v1.ResourceMemory] = resource.MustParse("-1")
	checkErrors(t, ValidateNode(bad),
		want{field.ErrorTypeInvalid, "spec.podCIDRs[0]", ""},
		want{field.ErrorTypeDuplicate, "spec.taints[1]", ""},
		want{field.ErrorTypeRequired, "spec.taints[2].effect", ""},
		want{field.ErrorTypeInvalid, "spec.taints[3].key", ""},
		want{field.ErrorTypeNotSupported, "spec.taints[3].effect", ""},
		want{field.ErrorTypeInvalid, "status.capacity[memory]", "must be greater than or equal to 0"})
	upd := n.DeepCopy()
	upd.Spec.PodCIDRs = []string{"10.2.0.0/24"}
	checkErrors(t, ValidateNodeUpdate(upd, n), want{field.ErrorTypeForbidden, "spec.podCIDRs", "may not change podCIDR"})
	unset := n.DeepCopy()
	unset.Spec.PodCIDRs = nil
	checkErrors(t, ValidateNodeUpdate(n, unset))
}

func validService() *v1.Service {
	s := &v1.Service{ObjectMeta: meta, Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Port: 80}}}}
	defaults.Service(s)
	return s
}

func TestValidateService(t *testing.T) {
	checkErrors(t, ValidateService(validService()))
	for name, tc := range map[string]struct {
		mutate func(*v1.Service)
		wants  []want
	}{
		"name must be DNS-1035": {func(s *v1.Service) { s.Name = "1web" }, []want{{field.ErrorTypeInvalid, "metadata.name", "DNS-1035 label"}}},
		"ports required":        {func(s *v1.Service) { s.Spec.Ports = nil }, []want{{field.ErrorTypeRequired, "spec.ports", ""}}},
		"port out of range":     {func(s *v1.Service) { s.Spec.Ports[0].Port = 0 }, []want{{field.ErrorTypeInvalid, "spec.ports[0].port", ""}}},
		"names required with two": {func(s *v1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "b", Port: 81, Protocol: "TCP", TargetPort: intstr.FromInt32(81)})
		}, []want{{field.ErrorTypeRequired, "spec.ports[0].name", ""}}},
		"duplicate port/protocol": {func(s *v1.Service) {
			s.Spec.Ports[0].Name = "a"
			s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: "b", Port: 80, Protocol: "TCP", TargetPort: intstr.FromInt32(8)})
		}, []want{{field.ErrorTypeDuplicate, "spec.ports[1]", ""}}},
		"nodePort on ClusterIP":              {func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30001 }, []want{{field.ErrorTypeForbidden, "spec.ports[0].nodePort", "may not be used when `type` is 'ClusterIP'"}}},
		"bad protocol":                       {func(s *v1.Service) { s.Spec.Ports[0].Protocol = "HTTP" }, []want{{field.ErrorTypeNotSupported, "spec.ports[0].protocol", ""}}},
		"bad targetPort name":                {func(s *v1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("Not_A_Name") }, []want{{field.ErrorTypeInvalid, "spec.ports[0].targetPort", ""}}},
		"bad type":                           {func(s *v1.Service) { s.Spec.Type = "Magic" }, []want{{field.ErrorTypeNotSupported, "spec.type", ""}}},
		"bad clusterIP":                      {func(s *v1.Service) { s.Spec.ClusterIP = "10.0.0.300"; s.Spec.ClusterIPs = []string{"10.0.0.300"} }, []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]", ""}}},
		"clusterIP mismatch":                 {func(s *v1.Service) { s.Spec.ClusterIP = "10.0.0.1"; s.Spec.ClusterIPs = []string{"10.0.0.2"} }, []want{{field.ErrorTypeInvalid, "spec.clusterIPs", "first value must match `clusterIP`"}}},
		"externalTrafficPolicy on ClusterIP": {func(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }, []want{{field.ErrorTypeInvalid, "spec.externalTrafficPolicy", "externally-accessible"}}},
		"affinity timeout": {func(s *v1.Service) {
			s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr(int32(0))}}
		}, []want{{field.ErrorTypeInvalid, "spec.sessionAffinityConfig.clientIP.timeoutSeconds", ""}}},
		"ExternalName needs name": {func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeExternalName; s.Spec.InternalTrafficPolicy = nil }, []want{{field.ErrorTypeRequired, "spec.externalName", ""}}},
		"selector label invalid":  {func(s *v1.Service) { s.Spec.Selector = map[string]string{"a": "b c"} }, []want{{field.ErrorTypeInvalid, "spec.selector", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := validService()
			tc.mutate(s)
			checkErrors(t, ValidateService(s), tc.wants...)
		})
	}
	old := validService()
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.0.0.10", []string{"10.0.0.10"}
	upd := old.DeepCopy()
	upd.Spec.ClusterIP, upd.Spec.ClusterIPs = "10.0.0.11", []string{"10.0.0.11"}
	checkErrors(t, ValidateServiceUpdate(upd, old), want{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "may not change once set"})
	unset := old.DeepCopy()
	unset.Spec.ClusterIP, unset.Spec.ClusterIPs = "", nil
	checkErrors(t, ValidateServiceUpdate(unset, old), want{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "primary clusterIP can not be unset"})
}

func TestValidateConfigMapAndSecret(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a.conf": "x", "bad/key": "y"}, BinaryData: map[string][]byte{"a.conf": nil}}
	checkErrors(t, ValidateConfigMap(cm),
		want{field.ErrorTypeInvalid, "data[bad/key]", "must consist of alphanumeric characters, '-', '_' or '.'"},
		want{field.ErrorTypeInvalid, "binaryData[a.conf]", "duplicate of key present in data"})
	big := &v1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": strings.Repeat("x", MaxSecretSize+1)}}
	checkErrors(t, ValidateConfigMap(big), want{field.ErrorTypeTooLong, field.NewPath("").String(), ""})
	imm := &v1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": "1"}, Immutable: ptr(true)}
	upd := imm.DeepCopy()
	upd.Data["a"] = "2"
	upd.Immutable = ptr(false)
	checkErrors(t, ValidateConfigMapUpdate(upd, imm),
		want{field.ErrorTypeForbidden, "immutable", "field is immutable when `immutable` is set"},
		want{field.ErrorTypeForbidden, "data", "field is immutable when `immutable` is set"})

	for name, tc := range map[string]struct {
		s     *v1.Secret
		wants []want
	}{
		"opaque ok":           {&v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}, nil},
		"bad key":             {&v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeOpaque, Data: map[string][]byte{"a b": nil}}, []want{{field.ErrorTypeInvalid, "data[a b]", ""}}},
		"tls needs cert, key": {&v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeTLS}, []want{{field.ErrorTypeRequired, "data[tls.crt]", ""}, {field.ErrorTypeRequired, "data[tls.key]", ""}}},
		"dockerconfigjson invalid": {&v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}},
			[]want{{field.ErrorTypeInvalid, "data[.dockerconfigjson]", ""}}},
		"basic auth empty":  {&v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeBasicAuth}, []want{{field.ErrorTypeRequired, "data[username]", ""}, {field.ErrorTypeRequired, "data[password]", ""}}},
		"ssh auth":          {&v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeSSHAuth}, []want{{field.ErrorTypeRequired, "data[ssh-privatekey]", ""}}},
		"sa token needs sa": {&v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeServiceAccountToken}, []want{{field.ErrorTypeRequired, "metadata.annotations[kubernetes.io/service-account.name]", ""}}},
	} {
		t.Run(name, func(t *testing.T) { checkErrors(t, ValidateSecret(tc.s), tc.wants...) })
	}
	oldS := &v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeOpaque, Immutable: ptr(true), Data: map[string][]byte{"a": []byte("1")}}
	newS := oldS.DeepCopy()
	newS.Type = "example.com/other"
	newS.Data["a"] = []byte("2")
	checkErrors(t, ValidateSecretUpdate(newS, oldS),
		want{field.ErrorTypeInvalid, "type", "field is immutable"},
		want{field.ErrorTypeForbidden, "data", "field is immutable when `immutable` is set"})
}

func validDeployment() *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx:1"}}}},
	}}
	defaults.Deployment(d)
	return d
}

func TestValidateDeployment(t *testing.T) {
	checkErrors(t, ValidateDeployment(validDeployment()))
	for name, tc := range map[string]struct {
		mutate func(*appsv1.Deployment)
		wants  []want
	}{
		"negative replicas": {func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(-1)) }, []want{{field.ErrorTypeInvalid, "spec.replicas", "must be greater than or equal to 0"}}},
		"selector required": {func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []want{{field.ErrorTypeRequired, "spec.selector", ""}, {field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"}}},
		"empty selector":    {func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, []want{{field.ErrorTypeInvalid, "spec.selector", "empty selector is invalid for deployment"}}},
		"selector mismatch": {func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "db"} }, []want{{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"}}},
		"restartPolicy":     {func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyNever }, []want{{field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy", ""}}},
		"template invalid":  {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }, []want{{field.ErrorTypeRequired, "spec.template.spec.containers[0].image", ""}}},
		"both zero": {func(d *appsv1.Deployment) {
			zero := intstr.FromInt32(0)
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &zero}
		}, []want{{field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0"}}},
		"over 100%": {func(d *appsv1.Deployment) {
			v := intstr.FromString("150%")
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = &v
		}, []want{{field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxUnavailable", "must not be greater than 100%"}}},
		"bad percent": {func(d *appsv1.Deployment) {
			v := intstr.FromString("ten")
			d.Spec.Strategy.RollingUpdate.MaxSurge = &v
		}, []want{{field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxSurge", ""}}},
		"recreate with rollingUpdate": {func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType }, []want{{field.ErrorTypeForbidden, "spec.strategy.rollingUpdate", ""}}},
		"unknown strategy":            {func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }, []want{{field.ErrorTypeNotSupported, "spec.strategy.type", ""}}},
		"progress deadline":           {func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 700 }, []want{{field.ErrorTypeInvalid, "spec.progressDeadlineSeconds", "must be greater than minReadySeconds"}}},
	} {
		t.Run(name, func(t *testing.T) {
			d := validDeployment()
			tc.mutate(d)
			checkErrors(t, ValidateDeployment(d), tc.wants...)
		})
	}
	old := validDeployment()
	upd := old.DeepCopy()
	upd.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
	upd.Spec.Template.Labels["tier"] = "x"
	checkErrors(t, ValidateDeploymentUpdate(upd, old), want{field.ErrorTypeInvalid, "spec.selector", "field is immutable"})
	st := old.DeepCopy()
	st.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 2, AvailableReplicas: 3}
	checkErrors(t, ValidateDeploymentStatusUpdate(st, old),
		want{field.ErrorTypeInvalid, "status.readyReplicas", greaterThanReplicas},
		want{field.ErrorTypeInvalid, "status.availableReplicas", greaterThanReplicas},
		want{field.ErrorTypeInvalid, "status.availableReplicas", "cannot be greater than readyReplicas"})
	checkErrors(t, ValidateScale(&autoscalingv1.Scale{ObjectMeta: meta, Spec: autoscalingv1.ScaleSpec{Replicas: -1}}), want{field.ErrorTypeInvalid, "spec.replicas", ""})
}

func TestValidateReplicaSet(t *testing.T) {
	d := validDeployment()
	rs := &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)), Selector: d.Spec.Selector, Template: d.Spec.Template}}
	checkErrors(t, ValidateReplicaSet(rs))
	bad := rs.DeepCopy()
	bad.Spec.Replicas = ptr(int32(-2))
	bad.Spec.Selector = nil
	checkErrors(t, ValidateReplicaSet(bad), want{field.ErrorTypeInvalid, "spec.replicas", ""}, want{field.ErrorTypeRequired, "spec.selector", ""},
		want{field.ErrorTypeInvalid, "spec.template.metadata.labels", ""})
	upd := rs.DeepCopy()
	upd.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
	checkErrors(t, ValidateReplicaSetUpdate(upd, rs), want{field.ErrorTypeInvalid, "spec.selector", "field is immutable"})
	st := rs.DeepCopy()
	st.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 2}
	checkErrors(t, ValidateReplicaSetStatusUpdate(st, rs), want{field.ErrorTypeInvalid, "status.fullyLabeledReplicas", greaterThanReplicas})
}

func TestValidateLeaseEventsSlices(t *testing.T) {
	checkErrors(t, ValidateLease(&coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr(int32(0)), LeaseTransitions: ptr(int32(-1))}}),
		want{field.ErrorTypeInvalid, "spec.leaseDurationSeconds", "must be greater than 0"},
		want{field.ErrorTypeInvalid, "spec.leaseTransitions", ""})

	legacy := &v1.Event{ObjectMeta: meta, InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "other"}, Reason: "Started"}
	checkErrors(t, ValidateEvent(legacy), want{field.ErrorTypeInvalid, "involvedObject.namespace", "does not match event.namespace"})
	legacy.InvolvedObject.Namespace = "default"
	checkErrors(t, ValidateEvent(legacy))
	newStyle := &v1.Event{ObjectMeta: meta, InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}, EventTime: metav1.MicroTime{Time: time.Now()}}
	checkErrors(t, ValidateEvent(newStyle),
		want{field.ErrorTypeRequired, "reportingController", ""}, want{field.ErrorTypeInvalid, "reportingController", "name part must be non-empty"},
		want{field.ErrorTypeInvalid, "reportingController", "name part must consist of"},
		want{field.ErrorTypeRequired, "reportingInstance", ""}, want{field.ErrorTypeRequired, "action", ""}, want{field.ErrorTypeRequired, "reason", ""})
	upd := legacy.DeepCopy()
	upd.Count = 5
	upd.Reason = "Other"
	checkErrors(t, ValidateEventUpdate(upd, legacy), want{field.ErrorTypeInvalid, "reason", "field is immutable"})

	ev := &eventsv1.Event{ObjectMeta: meta, EventTime: metav1.MicroTime{Time: time.Now()}, ReportingController: "berth.dev/agent", ReportingInstance: "n1",
		Action: "Started", Reason: "Started", Type: "Normal", Regarding: v1.ObjectReference{Namespace: "default"}, Note: strings.Repeat("x", 1025)}
	checkErrors(t, ValidateEventsV1Event(ev), want{field.ErrorTypeInvalid, "note", "at most 1024 characters"})

	tcp := v1.ProtocolTCP
	es := &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}, {Addresses: nil}, {Addresses: []string{"fd00::1"}}},
		Ports:     []discoveryv1.EndpointPort{{Name: ptr("http"), Protocol: &tcp, Port: ptr(int32(80))}, {Name: ptr("http"), Protocol: &tcp, Port: ptr(int32(0))}}}
	checkErrors(t, ValidateEndpointSlice(es),
		want{field.ErrorTypeRequired, "endpoints[1].addresses", "must contain at least 1 address"},
		want{field.ErrorTypeInvalid, "endpoints[2].addresses[0]", ""},
		want{field.ErrorTypeDuplicate, "ports[1].name", ""},
		want{field.ErrorTypeInvalid, "ports[1].port", ""})
	ok := &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4}
	upd2 := ok.DeepCopy()
	upd2.AddressType = discoveryv1.AddressTypeIPv6
	checkErrors(t, ValidateEndpointSliceUpdate(upd2, ok), want{field.ErrorTypeInvalid, "addressType", "field is immutable"})
}

func TestValidateStorage(t *testing.T) {
	pv := &v1.PersistentVolume{ObjectMeta: clusterMeta, Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/data"}}}}
	defaults.PersistentVolume(pv)
	checkErrors(t, ValidatePersistentVolume(pv))
	bad := pv.DeepCopy()
	bad.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod, "WriteSometimes"}
	bad.Spec.Capacity = nil
	bad.Spec.Local = &v1.LocalVolumeSource{Path: "/x"}
	checkErrors(t, ValidatePersistentVolume(bad),
		want{field.ErrorTypeNotSupported, "spec.accessModes", ""}, want{field.ErrorTypeForbidden, "spec.accessModes", "ReadWriteOncePod"},
		want{field.ErrorTypeRequired, "spec.capacity", ""}, want{field.ErrorTypeForbidden, "spec.local", "may not specify more than 1 volume type"})
	none := pv.DeepCopy()
	none.Spec.HostPath = nil
	checkErrors(t, ValidatePersistentVolume(none), want{field.ErrorTypeRequired, "spec", "must specify a volume type"})
	upd := pv.DeepCopy()
	upd.Spec.HostPath.Path = "/other"
	checkErrors(t, ValidatePersistentVolumeUpdate(upd, pv), want{field.ErrorTypeForbidden, "spec.persistentvolumesource", "immutable after creation"})

	pvc := &v1.PersistentVolumeClaim{ObjectMeta: meta, Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
	defaults.PersistentVolumeClaim(pvc)
	checkErrors(t, ValidatePersistentVolumeClaim(pvc))
	badC := pvc.DeepCopy()
	badC.Spec.AccessModes = nil
	badC.Spec.Resources.Requests = nil
	checkErrors(t, ValidatePersistentVolumeClaim(badC), want{field.ErrorTypeRequired, "spec.accessModes", "at least 1 access mode is required"}, want{field.ErrorTypeRequired, "spec.resources[storage]", ""})
	grow := pvc.DeepCopy()
	grow.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("2Gi")
	checkErrors(t, ValidatePersistentVolumeClaimUpdate(grow, pvc), want{field.ErrorTypeForbidden, "spec", "spec is immutable after creation"})
	grow.Status.Phase = v1.ClaimBound
	checkErrors(t, ValidatePersistentVolumeClaimUpdate(grow, pvc))
	bind := pvc.DeepCopy()
	bind.Spec.VolumeName = "pv1"
	checkErrors(t, ValidatePersistentVolumeClaimUpdate(bind, pvc))

	sc := &storagev1.StorageClass{ObjectMeta: clusterMeta, Provisioner: "berth.dev/local"}
	defaults.StorageClass(sc)
	checkErrors(t, ValidateStorageClass(sc))
	checkErrors(t, ValidateStorageClass(&storagev1.StorageClass{ObjectMeta: clusterMeta}), want{field.ErrorTypeRequired, "provisioner", ""}, want{field.ErrorTypeRequired, "volumeBindingMode", ""})
	scUpd := sc.DeepCopy()
	scUpd.Parameters = map[string]string{"a": "b"}
	checkErrors(t, ValidateStorageClassUpdate(scUpd, sc), want{field.ErrorTypeForbidden, "parameters", "updates to parameters are forbidden."})

	drv := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "local.csi.berth.dev"}}
	defaults.CSIDriver(drv)
	checkErrors(t, ValidateCSIDriver(drv))
	drv.Name = strings.Repeat("a", 64)
	checkErrors(t, ValidateCSIDriver(drv), want{field.ErrorTypeTooLong, "metadata.name", ""})

	cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "d.example.com", NodeID: "n1"}, {Name: "d.example.com"}}}}
	checkErrors(t, ValidateCSINode(cn), want{field.ErrorTypeDuplicate, "spec.drivers[1].name", ""}, want{field.ErrorTypeRequired, "spec.drivers[1].nodeID", ""})
}

func TestValidateRBAC(t *testing.T) {
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: nil, NonResourceURLs: []string{"/healthz"}},
		{Verbs: []string{"get"}},
	}}
	checkErrors(t, ValidateRole(role),
		want{field.ErrorTypeRequired, "rules[1].verbs", ""}, want{field.ErrorTypeInvalid, "rules[1].nonResourceURLs", "namespaced rules cannot apply to non-resource URLs"},
		want{field.ErrorTypeRequired, "rules[2].apiGroups", ""}, want{field.ErrorTypeRequired, "rules[2].resources", ""})
	cr := &rbacv1.ClusterRole{ObjectMeta: clusterMeta, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}}
	checkErrors(t, ValidateClusterRole(cr))
	rb := &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}, {Kind: "ServiceAccount", Name: "sa"}, {Kind: "Robot", Name: "r"}}}
	defaults.RoleBinding(rb)
	checkErrors(t, ValidateRoleBinding(rb), want{field.ErrorTypeNotSupported, "subjects[2].kind", ""})
	upd := rb.DeepCopy()
	upd.RoleRef.Name = "other"
	upd.Subjects = upd.Subjects[:2]
	checkErrors(t, ValidateRoleBindingUpdate(upd, rb), want{field.ErrorTypeInvalid, "roleRef", "cannot change roleRef"})
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: clusterMeta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa"}}}
	checkErrors(t, ValidateClusterRoleBinding(crb), want{field.ErrorTypeNotSupported, "roleRef.kind", ""}, want{field.ErrorTypeRequired, "subjects[0].namespace", ""})
	checkErrors(t, ValidateServiceAccount(&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "Bad_SA", Namespace: "default"}}), want{field.ErrorTypeInvalid, "metadata.name", ""})
}

func TestValidateEndpoints(t *testing.T) {
	ep := &v1.Endpoints{ObjectMeta: meta, Subsets: []v1.EndpointSubset{
		{Addresses: []v1.EndpointAddress{{IP: "10.0.0.1"}}, Ports: []v1.EndpointPort{{Port: 80, Protocol: v1.ProtocolTCP}}},
		{Ports: []v1.EndpointPort{{Port: 0, Protocol: "X"}, {Name: "b", Port: 1, Protocol: v1.ProtocolUDP}}},
		{Addresses: []v1.EndpointAddress{{IP: "bogus", Hostname: "A_B"}}},
	}}
	checkErrors(t, ValidateEndpoints(ep),
		want{field.ErrorTypeRequired, "subsets[1]", "must specify `addresses` or `notReadyAddresses`"},
		want{field.ErrorTypeRequired, "subsets[1].ports[0].name", ""},
		want{field.ErrorTypeInvalid, "subsets[1].ports[0].port", ""},
		want{field.ErrorTypeNotSupported, "subsets[1].ports[0].protocol", ""},
		want{field.ErrorTypeInvalid, "subsets[2].addresses[0].ip", ""},
		want{field.ErrorTypeInvalid, "subsets[2].addresses[0].hostname", ""})
}
