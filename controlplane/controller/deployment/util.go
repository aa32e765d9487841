package deployment

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Label and annotation keys, as upstream's deployment controller and
// kubectl use them.
const (
	// PodTemplateHashLabel tells a Deployment's ReplicaSets (and their pods)
	// apart.
	PodTemplateHashLabel = appsv1.DefaultDeploymentUniqueLabelKey
	// RevisionAnnotation is the revision of a ReplicaSet (and the current
	// one of its Deployment).
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the earlier revisions a ReplicaSet had
	// before a rollback made it current again.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's replicas when the
	// ReplicaSet was last scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is replicas + maxSurge when it was last scaled.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// MaxRevisionHistoryChars bounds RevisionHistoryAnnotation.
	MaxRevisionHistoryChars = 2000
)

// Condition reasons (upstream's, which `kubectl rollout status` reads).
const (
	ReasonReplicaSetUpdated    = "ReplicaSetUpdated"
	ReasonFailedRSCreate       = "ReplicaSetCreateError"
	ReasonNewReplicaSetCreated = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet   = "FoundNewReplicaSet"
	ReasonNewRSAvailable       = "NewReplicaSetAvailable"
	ReasonTimedOut             = "ProgressDeadlineExceeded"
	ReasonPaused               = "DeploymentPaused"
	ReasonResumed              = "DeploymentResumed"
	ReasonMinimumAvailable     = "MinimumReplicasAvailable"
	ReasonMinimumUnavailable   = "MinimumReplicasUnavailable"
)

// annotations never copied from a Deployment to its ReplicaSets.
var skipCopyAnnotation = map[string]bool{
	corev1.LastAppliedConfigAnnotation:  true,
	RevisionAnnotation:                  true,
	RevisionHistoryAnnotation:           true,
	DesiredReplicasAnnotation:           true,
	MaxReplicasAnnotation:               true,
	"deprecated.deployment.rollback.to": true,
}

// ComputeHash is the pod-template-hash of template with collisionCount:
// the FNV-32a of the template's deep dump (upstream's DeepHashObject), then
// the collision count's little-endian bytes, as a safe-encoded decimal.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		c := uint32(*collisionCount)
		h.Write([]byte{byte(c), byte(c >> 8), byte(c >> 16), byte(c >> 24)})
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// EqualIgnoreHash compares two pod templates ignoring the pod-template-hash label.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, PodTemplateHashLabel)
	delete(b.Labels, PodTemplateHashLabel)
	return equality.Semantic.DeepEqual(a, b)
}

func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

// ResolveFenceposts turns maxSurge and maxUnavailable into pod counts for
// desired replicas: surge percentages round up, unavailable ones round
// down, and if both come out zero unavailable becomes one.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (int32, int32, error) {
	zero := intstr.FromInt32(0)
	if maxSurge == nil {
		maxSurge = &zero
	}
	if maxUnavailable == nil {
		maxUnavailable = &zero
	}
	surge, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, int(desired), true)
	if err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate.maxSurge: %w", err)
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(desired), false)
	if err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate.maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return int32(surge), int32(unavailable), nil
}

func isRolling(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.Type == ""
}

func rollingParams(d *appsv1.Deployment) (*intstr.IntOrString, *intstr.IntOrString) {
	if d.Spec.Strategy.RollingUpdate == nil {
		// apps/v1 defaults: 25% and 25%.
		p := intstr.FromString("25%")
		return &p, &p
	}
	return d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable
}

// MaxSurge is the surge in pods of a RollingUpdate Deployment (0 otherwise).
func MaxSurge(d *appsv1.Deployment) int32 {
	if !isRolling(d) {
		return 0
	}
	s, u := rollingParams(d)
	surge, _, _ := ResolveFenceposts(s, u, replicasOf(d))
	return surge
}

// MaxUnavailable is the unavailable pods a Deployment tolerates: 0 for
// Recreate or no replicas, never more than replicas.
func MaxUnavailable(d *appsv1.Deployment) int32 {
	if !isRolling(d) || replicasOf(d) == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, unavailable, _ := ResolveFenceposts(s, u, replicasOf(d))
	return min(unavailable, replicasOf(d))
}

func sumSpec(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += rsReplicas(rs)
	}
	return n
}

func sumAvailable(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.AvailableReplicas
		}
	}
	return n
}

func activeRSs(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && rsReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// byCreation sorts oldest first, name breaking ties.
func byCreation(rss []*appsv1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool {
		if rss[i].CreationTimestamp.Equal(&rss[j].CreationTimestamp) {
			return rss[i].Name < rss[j].Name
		}
		return rss[i].CreationTimestamp.Before(&rss[j].CreationTimestamp)
	})
}

// Revision parses a ReplicaSet's revision annotation (0 when absent or bad).
func Revision(obj metav1.Object) int64 {
	v, err := strconv.ParseInt(obj.GetAnnotations()[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, Revision(rs))
	}
	return m
}

func intAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// setReplicasAnnotations records desired and max replicas on rs; it
// reports whether anything changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{DesiredReplicasAnnotation: strconv.Itoa(int(desired)), MaxReplicasAnnotation: strconv.Itoa(int(maxReplicas))} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// hasProgressDeadline: progressDeadlineSeconds set and not "infinite".
func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// GetCondition returns the condition of type t, or nil.
func GetCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	n := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: n, LastTransitionTime: n}
}

// setCondition adds or replaces c; an unchanged status and reason leaves
// the existing condition alone, an unchanged status keeps its transition time.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := GetCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var kept []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	st.Conditions = kept
}
