package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Deployment applies the apps/v1 deployment defaults: replicas 1, strategy
// RollingUpdate with maxUnavailable and maxSurge 25%, revisionHistoryLimit
// 10, progressDeadlineSeconds 600, and the pod template defaults.
func Deployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = int32Ptr(1)
	}
	if d.Spec.Strategy.Type == "" {
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if d.Spec.Strategy.RollingUpdate == nil {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		ru := d.Spec.Strategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			v := intstr.FromString("25%")
			ru.MaxUnavailable = &v
		}
		if ru.MaxSurge == nil {
			v := intstr.FromString("25%")
			ru.MaxSurge = &v
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = int32Ptr(600)
	}
	PodTemplateSpec(&d.Spec.Template)
}

// ReplicaSet applies the apps/v1 replica set defaults: replicas 1 and the pod
// template defaults.
func ReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = int32Ptr(1)
	}
	PodTemplateSpec(&rs.Spec.Template)
}

// StorageClass applies the storage.k8s.io/v1 defaults: reclaimPolicy Delete
// and volumeBindingMode Immediate.
func StorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		p := v1.PersistentVolumeReclaimDelete
		sc.ReclaimPolicy = &p
	}
	if sc.VolumeBindingMode == nil {
		m := storagev1.VolumeBindingImmediate
		sc.VolumeBindingMode = &m
	}
}

// CSIDriver applies the CSIDriver defaults: attachRequired true,
// podInfoOnMount, storageCapacity, requiresRepublish and seLinuxMount false,
// fsGroupPolicy ReadWriteOnceWithFSType, volumeLifecycleModes [Persistent].
func CSIDriver(d *storagev1.CSIDriver) {
	t, f := true, false
	if d.Spec.AttachRequired == nil {
		d.Spec.AttachRequired = &t
	}
	if d.Spec.PodInfoOnMount == nil {
		d.Spec.PodInfoOnMount = &f
	}
	if d.Spec.StorageCapacity == nil {
		d.Spec.StorageCapacity = &f
	}
	if d.Spec.FSGroupPolicy == nil {
		p := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
		d.Spec.FSGroupPolicy = &p
	}
	if len(d.Spec.VolumeLifecycleModes) == 0 {
		d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if d.Spec.RequiresRepublish == nil {
		d.Spec.RequiresRepublish = &f
	}
	if d.Spec.SELinuxMount == nil {
		d.Spec.SELinuxMount = &f
	}
}

// EndpointSlice applies the discovery.k8s.io/v1 defaults: every port gets
// name "" and protocol TCP when unset.
func EndpointSlice(es *discoveryv1.EndpointSlice) {
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			empty := ""
			p.Name = &empty
		}
		if p.Protocol == nil {
			tcp := v1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
}

// RoleBinding applies the RBAC defaults to a role binding's roleRef and subjects.
func RoleBinding(rb *rbacv1.RoleBinding) {
	roleRef(&rb.RoleRef)
	subjects(rb.Subjects)
}

// ClusterRoleBinding applies the RBAC defaults to a cluster role binding's
// roleRef and subjects.
func ClusterRoleBinding(crb *rbacv1.ClusterRoleBinding) {
	roleRef(&crb.RoleRef)
	subjects(crb.Subjects)
}

// roleRef defaults the role reference's apiGroup to rbac.authorization.k8s.io.
func roleRef(r *rbacv1.RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
}

// subjects defaults apiGroup: "" for ServiceAccount subjects,
// rbac.authorization.k8s.io for User and Group subjects.
func subjects(ss []rbacv1.Subject) {
	for i := range ss {
		s := &ss[i]
		if s.APIGroup != "" {
			continue
		}
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// DaemonSet applies the apps/v1 daemon set defaults: updateStrategy
// RollingUpdate with maxUnavailable 1 and maxSurge 0, revisionHistoryLimit
// 10, and the pod template defaults.
func DaemonSet(ds *appsv1.DaemonSet) {
	s := &ds.Spec.UpdateStrategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromInt32(1)
			s.RollingUpdate.MaxUnavailable = &v
		}
		if s.RollingUpdate.MaxSurge == nil {
			v := intstr.FromInt32(0)
			s.RollingUpdate.MaxSurge = &v
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	PodTemplateSpec(&ds.Spec.Template)
}

// StatefulSet applies the apps/v1 stateful set defaults (upstream's with
// MaxUnavailableStatefulSet off): podManagementPolicy OrderedReady,
// updateStrategy RollingUpdate with partition 0, the PVC retention policy
// Retain/Retain, replicas 1, revisionHistoryLimit 10, and the pod template
// defaults.
func StatefulSet(ss *appsv1.StatefulSet) {
	spec := &ss.Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := spec.UpdateStrategy.RollingUpdate; spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition == nil {
		ru.Partition = int32Ptr(0)
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if spec.Replicas == nil {
		spec.Replicas = int32Ptr(1)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = int32Ptr(10)
	}
	PodTemplateSpec(&spec.Template)
	for i := range spec.VolumeClaimTemplates {
		PersistentVolumeClaim(&spec.VolumeClaimTemplates[i])
	}
}

// HorizontalPodAutoscaler applies the autoscaling/v2 defaults: minReplicas
// 1, a cpu utilization target of 80% when no metric is given, and, when a
// behavior is given, every unset part of its rules from upstream's
// defaults (scale up: no stabilization, the larger of +4 pods and +100%
// per 15 s; scale down: the window left to the controller, -100% per
// 15 s; selectPolicy Max).
func HorizontalPodAutoscaler(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = int32Ptr(1)
	}
	if len(hpa.Spec.Metrics) == 0 {
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: int32Ptr(80)}}}}
	}
	if b := hpa.Spec.Behavior; b != nil {
		b.ScaleUp = ScaleUpRules(b.ScaleUp)
		b.ScaleDown = ScaleDownRules(b.ScaleDown)
	}
}

// ScaleUpRules fills the unset fields of r from upstream's scale-up defaults.
func ScaleUpRules(r *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	return fillRules(r, &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: int32Ptr(0), SelectPolicy: selectPtr(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}})
}

// ScaleDownRules fills the unset fields of r from upstream's scale-down
// defaults (the stabilization window stays unset: the controller's
// default of 300 s applies).
func ScaleDownRules(r *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	return fillRules(r, &autoscalingv2.HPAScalingRules{SelectPolicy: selectPtr(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}})
}

func fillRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}

func selectPtr(s autoscalingv2.ScalingPolicySelect) *autoscalingv2.ScalingPolicySelect { return &s }
