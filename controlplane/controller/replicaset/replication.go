package replicaset

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ReplicationName is the ReplicationController controller's name (upstream's
// "replicationcontroller").
const ReplicationName = "replicationcontroller"

// NewReplicationManager returns the core/v1 ReplicationController
// controller: this package's controller over replication controllers, each
// seen as the ReplicaSet it is equivalent to (its equality-based selector as
// matchLabels), as upstream's replication manager is its ReplicaSet
// controller through an adapter. Pods it creates name the
// ReplicationController as their controller; events name it too.
func NewReplicationManager(cfg Config) (*Controller, error) {
	if err := cfg.Validate(ReplicationName, DefaultWorkers); err != nil {
		return nil, err
	}
	return newController(cfg, ReplicationName, replicationControllers{cfg.Informers.Core().V1().ReplicationControllers(), cfg.Client})
}

// replicationControllers are the core/v1 ReplicationControllers a
// Controller made by NewReplicationManager manages.
type replicationControllers struct {
	inf    coreinformers.ReplicationControllerInformer
	client kubernetes.Interface
}

func (replicationControllers) kind() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("ReplicationController")
}

func (r replicationControllers) informer() cache.SharedIndexInformer { return r.inf.Informer() }

func (r replicationControllers) get(ns, name string) (*appsv1.ReplicaSet, error) {
	rc, err := r.inf.Lister().ReplicationControllers(ns).Get(name)
	if err != nil {
		return nil, err
	}
	return ReplicaSetFromRC(rc), nil
}

func (r replicationControllers) list(ns string) ([]*appsv1.ReplicaSet, error) {
	rcs, err := r.inf.Lister().ReplicationControllers(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*appsv1.ReplicaSet, len(rcs))
	for i, rc := range rcs {
		out[i] = ReplicaSetFromRC(rc)
	}
	return out, nil
}

func (r replicationControllers) fetch(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
	rc, err := r.client.CoreV1().ReplicationControllers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return ReplicaSetFromRC(rc), nil
}

func (r replicationControllers) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rc, err := r.client.CoreV1().ReplicationControllers(rs.Namespace).UpdateStatus(ctx, RCFromReplicaSet(rs), metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return ReplicaSetFromRC(rc), nil
}

// ReplicaSetFromRC returns the ReplicaSet equivalent to rc (a deep copy):
// the same metadata, replicas, minReadySeconds, template and status, and
// rc's selector as matchLabels.
func ReplicaSetFromRC(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: *rc.ObjectMeta.DeepCopy(),
		Spec: appsv1.ReplicaSetSpec{
			MinReadySeconds: rc.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: maps.Clone(rc.Spec.Selector)},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas: rc.Status.Replicas, FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas: rc.Status.ReadyReplicas, AvailableReplicas: rc.Status.AvailableReplicas,
			ObservedGeneration: rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Replicas != nil {
		n := *rc.Spec.Replicas
		rs.Spec.Replicas = &n
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template.DeepCopy()
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status, LastTransitionTime: c.LastTransitionTime,
			Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// RCFromReplicaSet is ReplicaSetFromRC's inverse (the selector's matchLabels
// become the replication controller's selector).
func RCFromReplicaSet(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: *rs.ObjectMeta.DeepCopy(),
		Spec: corev1.ReplicationControllerSpec{
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        rs.Spec.Template.DeepCopy(),
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas: rs.Status.Replicas, FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas: rs.Status.ReadyReplicas, AvailableReplicas: rs.Status.AvailableReplicas,
			ObservedGeneration: rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Replicas != nil {
		n := *rs.Spec.Replicas
		rc.Spec.Replicas = &n
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = maps.Clone(rs.Spec.Selector.MatchLabels)
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status, LastTransitionTime: c.LastTransitionTime,
			Reason: c.Reason, Message: c.Message,
		})
	}
	return rc
}
