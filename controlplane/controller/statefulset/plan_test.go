package statefulset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newSet(replicas int32, mutate ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "set-uid", Generation: 3},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         "nginx",
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
		},
	}
	for _, m := range mutate {
		m(set)
	}
	return set
}

type podState int

const (
	pending   podState = iota
	running            // running, not ready
	ready              // running and ready for a long time
	justReady          // ready since now
	failed
	terminating
)

func pod(set *appsv1.StatefulSet, ordinal int, rev string, st podState) *corev1.Pod {
	p := NewPod(set, ordinal, rev)
	p.UID = types.UID(fmt.Sprintf("pod-uid-%d", ordinal))
	p.Status.Phase = corev1.PodPending
	switch st {
	case running:
		p.Status.Phase = corev1.PodRunning
	case ready, justReady, terminating:
		since := now.Add(-time.Hour)
		if st == justReady {
			since = now
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
		if st == terminating {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}
	case failed:
		p.Status.Phase = corev1.PodFailed
	}
	return p
}

func claim(set *appsv1.StatefulSet, ordinal int, owners ...metav1.OwnerReference) *corev1.PersistentVolumeClaim {
	c := Claims(set, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: PodName(set, ordinal)}})["data"]
	c.OwnerReferences = owners
	return c
}

func state(set *appsv1.StatefulSet, pods []*corev1.Pod, claims ...*corev1.PersistentVolumeClaim) State {
	byName := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range claims {
		byName[c.Name] = c
	}
	cur := set.DeepCopy()
	upd := set.DeepCopy()
	upd.Spec.Template.Spec.Containers[0].Image = "img:v2"
	return State{Set: set, Pods: pods, Claims: byName, CurrentSet: cur, UpdateSet: upd, Current: "web-r1", Update: "web-r1", Now: now}
}

// steps renders a plan as "op pod[@revision] +claims ~claims" strings.
func steps(p Plan) []string {
	var out []string
	for _, s := range p.Steps {
		str := s.Op.String() + " " + s.Pod.Name
		if s.Op == OpCreate {
			str += "@" + Revision(s.Pod)
		}
		for _, c := range s.Claims {
			str += " +" + c.Name
		}
		for _, c := range s.ClaimUpdates {
			str += " ~" + c.Name
		}
		if s.Err != nil {
			str += " !" + s.Err.Error()
		}
		out = append(out, str)
	}
	return out
}

func TestDecide(t *testing.T) {
	parallel := func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }
	onDelete := func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	}
	partition := func(n int32) func(*appsv1.StatefulSet) {
		return func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(n) }
	}
	for _, tc := range []struct {
		name   string
		set    *appsv1.StatefulSet
		pods   func(*appsv1.StatefulSet) []*corev1.Pod
		claims func(*appsv1.StatefulSet) []*corev1.PersistentVolumeClaim
		update string // the update revision; default web-r1 (= current)
		want   []string
	}{
		{name: "ordered scale up creates the first missing pod with its claim", set: newSet(3),
			pods: func(*appsv1.StatefulSet) []*corev1.Pod { return nil },
			want: []string{"create web-0@web-r1 +data-web-0"}},
		{name: "ordered scale up waits for the predecessor to be ready", set: newSet(3),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{pod(s, 0, "web-r1", running)} }},
		{name: "ordered scale up goes on once the predecessor is ready, claim kept", set: newSet(3),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{pod(s, 0, "web-r1", ready)} },
			claims: func(s *appsv1.StatefulSet) []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{claim(s, 0), claim(s, 1)}
			},
			want: []string{"create web-1@web-r1"}},
		{name: "minReadySeconds: a just-ready predecessor is not available yet", set: newSet(3, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 10 }),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{pod(s, 0, "web-r1", justReady)} }},
		{name: "parallel scale up creates every missing pod", set: newSet(3, parallel),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{pod(s, 1, "web-r1", running)} },
			want: []string{"create web-0@web-r1 +data-web-0", "create web-2@web-r1 +data-web-2"}},
		{name: "ordered scale down deletes the highest ordinal only", set: newSet(1),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", ready), pod(s, 2, "web-r1", ready)}
			},
			want: []string{"delete web-2"}},
		{name: "ordered scale down waits for a terminating pod", set: newSet(1),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", ready), pod(s, 2, "web-r1", terminating)}
			}},
		{name: "ordered scale down waits for an unhealthy replica", set: newSet(1),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", running), pod(s, 1, "web-r1", ready)}
			}},
		{name: "ordered scale down removes the first unhealthy condemned pod", set: newSet(1),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", running)}
			},
			want: []string{"delete web-1"}},
		{name: "parallel scale down deletes every condemned pod", set: newSet(1, parallel),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", running), pod(s, 2, "web-r1", ready)}
			},
			want: []string{"delete web-2", "delete web-1"}},
		{name: "a failed pod is deleted to be recreated", set: newSet(2),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", failed), pod(s, 1, "web-r1", ready)}
			},
			want: []string{"delete web-0"}},
		{name: "rolling update deletes the highest old pod", set: newSet(3), update: "web-r2",
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", ready), pod(s, 2, "web-r1", ready)}
			},
			want: []string{"delete web-2"}},
		{name: "rolling update waits for the updated pod to be available", set: newSet(3), update: "web-r2",
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", ready), pod(s, 2, "web-r2", running)}
			}},
		{name: "rolling update stops at the partition", set: newSet(3, partition(2)), update: "web-r2",
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", ready), pod(s, 2, "web-r2", ready)}
			}},
		{name: "below the partition a recreated pod keeps the current revision", set: newSet(3, partition(2)), update: "web-r2",
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 2, "web-r2", ready)}
			},
			want: []string{"create web-1@web-r1 +data-web-1"}},
		{name: "at the partition a recreated pod gets the update revision", set: newSet(3, partition(2)), update: "web-r2",
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", ready)}
			},
			want: []string{"create web-2@web-r2 +data-web-2"}},
		{name: "OnDelete never deletes old pods", set: newSet(2, onDelete), update: "web-r2",
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", ready)}
			}},
		{name: "a pending pod gets its missing claim", set: newSet(1),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{pod(s, 0, "web-r1", pending)} },
			want: []string{"claims web-0 +data-web-0"}},
		{name: "a claim being deleted blocks the pod", set: newSet(1),
			pods: func(*appsv1.StatefulSet) []*corev1.Pod { return nil },
			claims: func(s *appsv1.StatefulSet) []*corev1.PersistentVolumeClaim {
				c := claim(s, 0)
				c.DeletionTimestamp = &metav1.Time{Time: now}
				return []*corev1.PersistentVolumeClaim{c}
			},
			want: []string{"create web-0@web-r1 !pvc data-web-0 is being deleted"}},
		{name: "a pod whose storage drifted is repaired", set: newSet(1),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				p := pod(s, 0, "web-r1", ready)
				p.Spec.Volumes = nil
				return []*corev1.Pod{p}
			},
			claims: func(s *appsv1.StatefulSet) []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{claim(s, 0)}
			},
			want: []string{"update web-0"}},
		{name: "whenScaled Delete: a condemned pod's claim gets the pod as owner before the pod goes",
			set: newSet(1, func(s *appsv1.StatefulSet) {
				s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: retain, WhenScaled: del}
			}),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "web-r1", ready), pod(s, 1, "web-r1", ready)}
			},
			claims: func(s *appsv1.StatefulSet) []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{claim(s, 0), claim(s, 1)}
			},
			want: []string{"claims web-1 ~data-web-1", "delete web-1"}},
		{name: "whenScaled Delete: a new pod waits for its predecessor's claim to go",
			set: newSet(1, func(s *appsv1.StatefulSet) {
				s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: retain, WhenScaled: del}
			}),
			pods: func(*appsv1.StatefulSet) []*corev1.Pod { return nil },
			claims: func(s *appsv1.StatefulSet) []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{claim(s, 0, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "old", Controller: ptr.To(true)})}
			}},
		{name: "deleting set: nothing but status", set: newSet(2, func(s *appsv1.StatefulSet) { s.DeletionTimestamp = &metav1.Time{Time: now} }),
			pods: func(*appsv1.StatefulSet) []*corev1.Pod { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var claims []*corev1.PersistentVolumeClaim
			if tc.claims != nil {
				claims = tc.claims(tc.set)
			}
			s := state(tc.set, tc.pods(tc.set), claims...)
			if tc.update != "" {
				s.Update = tc.update
			}
			got := steps(Decide(s))
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Fatalf("steps:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}

func TestDecideNewPodIdentity(t *testing.T) {
	set := newSet(1, func(s *appsv1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: del, WhenScaled: retain}
	})
	plan := Decide(state(set, nil))
	if len(plan.Steps) != 1 {
		t.Fatalf("steps %v", steps(plan))
	}
	p := plan.Steps[0].Pod
	if p.Name != "web-0" || p.Spec.Hostname != "web-0" || p.Spec.Subdomain != "nginx" || p.Labels[appsv1.StatefulSetPodNameLabel] != "web-0" ||
		p.Labels[appsv1.PodIndexLabel] != "0" || p.Labels[appsv1.StatefulSetRevisionLabel] != "web-r1" {
		t.Errorf("pod identity: %+v %+v", p.ObjectMeta, p.Spec)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-0" {
		t.Errorf("volumes %+v", p.Spec.Volumes)
	}
	c := plan.Steps[0].Claims[0]
	if c.Labels["app"] != "web" || len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != set.UID || !*c.OwnerReferences[0].Controller {
		t.Errorf("claim with whenDeleted Delete: %+v", c.ObjectMeta)
	}
}

func TestStatus(t *testing.T) {
	set := newSet(3, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 10 })
	pods := []*corev1.Pod{pod(set, 0, "web-r2", ready), pod(set, 1, "web-r1", justReady), pod(set, 2, "web-r1", terminating)}
	s := state(set, pods)
	s.Update = "web-r2"
	s.CollisionCount = 1
	st := Decide(s).Status
	if st.Replicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 2 || st.CurrentReplicas != 1 || st.UpdatedReplicas != 1 ||
		st.ObservedGeneration != 3 || st.CurrentRevision != "web-r1" || st.UpdateRevision != "web-r2" || *st.CollisionCount != 1 {
		t.Fatalf("status %+v", st)
	}
	// Every replica updated and ready: the rolling update completes.
	done := state(set, []*corev1.Pod{pod(set, 0, "web-r2", ready), pod(set, 1, "web-r2", ready), pod(set, 2, "web-r2", ready)})
	done.Update = "web-r2"
	st = Decide(done).Status
	if st.CurrentRevision != "web-r2" || st.CurrentReplicas != 3 {
		t.Fatalf("completed update status %+v", st)
	}
	// A deletion for update counts the pod out of currentReplicas.
	upd := state(set, []*corev1.Pod{pod(set, 0, "web-r1", ready), pod(set, 1, "web-r1", ready), pod(set, 2, "web-r1", ready)})
	upd.Update = "web-r2"
	if st = Decide(upd).Status; st.CurrentReplicas != 2 {
		t.Fatalf("status during update %+v", st)
	}
}

func TestDecideRevisions(t *testing.T) {
	set := newSet(1)
	r1, err := NewRevision(set, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	v2 := newSet(1, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "img:v2" })
	r2, _ := NewRevision(v2, 2, 0)
	if r1.Name == r2.Name || !strings.HasPrefix(r1.Name, "web-") || r1.Labels[appsv1.ControllerRevisionHashLabelKey] != strings.TrimPrefix(r1.Name, "web-") {
		t.Fatalf("names %s %s labels %v", r1.Name, r2.Name, r1.Labels)
	}
	// No history: the revision is created and is also current.
	rd, _ := DecideRevisions(set, nil)
	if !rd.Create || rd.Update.Revision != 1 || rd.Current != rd.Update {
		t.Fatalf("first: %+v", rd)
	}
	// The newest revision matches: nothing to do.
	withStatus := set.DeepCopy()
	withStatus.Status.CurrentRevision = r1.Name
	rd, _ = DecideRevisions(withStatus, []*appsv1.ControllerRevision{r1})
	if rd.Create || rd.Renumber || rd.Update != r1 || rd.Current != r1 {
		t.Fatalf("steady: %+v", rd)
	}
	// A template change makes a new revision; the current stays.
	v2.Status.CurrentRevision = r1.Name
	rd, _ = DecideRevisions(v2, []*appsv1.ControllerRevision{r1})
	if !rd.Create || rd.Update.Revision != 2 || rd.Current != r1 {
		t.Fatalf("update: %+v", rd)
	}
	// Back to an older template (rollout undo): that revision is renumbered.
	back := set.DeepCopy()
	back.Status.CurrentRevision = r2.Name
	rd, _ = DecideRevisions(back, []*appsv1.ControllerRevision{r1, r2})
	if !rd.Renumber || rd.Update.Name != r1.Name || rd.Update.Revision != 3 || rd.Current != r2 {
		t.Fatalf("rollback: %+v", rd)
	}
	// The data round-trips to the template.
	applied, err := ApplyRevision(set, r2)
	if err != nil || applied.Spec.Template.Spec.Containers[0].Image != "img:v2" {
		t.Fatalf("apply: %v %v", err, applied.Spec.Template.Spec.Containers)
	}
	// A collision count changes the hash.
	if HashRevision(r1.Data.Raw, ptr.To[int32](1)) == HashRevision(r1.Data.Raw, ptr.To[int32](0)) {
		t.Fatal("collision count ignored")
	}
}

func TestToTruncate(t *testing.T) {
	set := newSet(1, func(s *appsv1.StatefulSet) { s.Spec.RevisionHistoryLimit = ptr.To[int32](1) })
	var revs []*appsv1.ControllerRevision
	for i := 1; i <= 5; i++ {
		revs = append(revs, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i)}, Revision: int64(i)})
	}
	live := pod(set, 0, "web-2", ready)
	got := ToTruncate(set, revs, []*corev1.Pod{live}, "web-4", "web-5")
	if len(got) != 1 || got[0].Name != "web-1" {
		t.Fatalf("truncate %v", got)
	}
}
