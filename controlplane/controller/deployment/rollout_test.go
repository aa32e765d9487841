package deployment

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func mkDeploy(replicas int32, image string, surge, unavail intstr.IntOrString) *appsv1.Deployment {
	deadline := int32(600)
	limit := int32(10)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(image),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
			ProgressDeadlineSeconds: &deadline,
			RevisionHistoryLimit:    &limit,
		},
	}
}

func mkRS(name, image string, revision int64, spec, available int32, created time.Time) *appsv1.ReplicaSet {
	tmpl := template(image)
	tmpl.Labels[PodTemplateHashLabel] = name
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(created),
			Annotations: map[string]string{RevisionAnnotation: strconv.FormatInt(revision, 10)}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &spec, Template: tmpl},
		Status: appsv1.ReplicaSetStatus{Replicas: spec, ReadyReplicas: available, AvailableReplicas: available},
	}
}

// cluster simulates the apiserver and the ReplicaSet controller around
// the planner: plans are applied to the ReplicaSets, and (when settle)
// every ReplicaSet's pods exist and are available right after.
type cluster struct {
	d   *appsv1.Deployment
	rss []*appsv1.ReplicaSet
}

func (c *cluster) apply(t testing.TB, plan Plan) {
	t.Helper()
	for _, a := range plan.Actions {
		i := slices.IndexFunc(c.rss, func(rs *appsv1.ReplicaSet) bool { return rs.Name == a.RS.Name })
		if i < 0 {
			t.Fatalf("action on unknown replicaset %s", a.RS.Name)
		}
		switch a.Kind {
		case ActionScale:
			c.rss[i] = a.RS.DeepCopy()
		case ActionDelete:
			c.rss = slices.Delete(c.rss, i, i+1)
		}
	}
	if plan.Status != nil {
		c.d.Status = *plan.Status
	}
}

func (c *cluster) settle(available bool) {
	for _, rs := range c.rss {
		rs.Status.Replicas = rsReplicas(rs)
		if available || rs.Status.AvailableReplicas > rsReplicas(rs) {
			rs.Status.AvailableReplicas = rsReplicas(rs)
			rs.Status.ReadyReplicas = rsReplicas(rs)
		}
	}
}

// step runs one sync like the controller does (new RS first when missing).
func (c *cluster) step(t testing.TB, now time.Time) {
	t.Helper()
	newRS, old := SplitReplicaSets(c.d, c.rss)
	if newRS == nil {
		p := PlanNewReplicaSet(c.d, nil, old, true, now)
		p.Create.UID = types.UID(p.Create.Name + "-uid")
		p.Create.CreationTimestamp = metav1.NewTime(now)
		c.rss = append(c.rss, p.Create)
		c.d = p.Deployment
		return
	}
	c.apply(t, Rolling(c.d, newRS, old, now))
}

func (c *cluster) sizes() string {
	newRS, old := SplitReplicaSets(c.d, c.rss)
	return fmt.Sprintf("new=%d old=%d", rsReplicas(newRS), sumSpec(old))
}

func TestRollingUpdateSequence(t *testing.T) {
	for _, tc := range []struct {
		name          string
		replicas      int32
		surge, unavl  intstr.IntOrString
		podsAvailable bool
		want          []string
	}{
		{
			name: "25%/25% of 10: surge 3, unavailable 2", replicas: 10,
			surge: intstr.FromString("25%"), unavl: intstr.FromString("25%"), podsAvailable: true,
			want: []string{"new=3 old=10", "new=3 old=5", "new=8 old=5", "new=8 old=0", "new=10 old=0", "new=10 old=0"},
		},
		{
			name: "maxSurge 0, maxUnavailable 1 of 3: one pod at a time", replicas: 3,
			surge: intstr.FromInt32(0), unavl: intstr.FromInt32(1), podsAvailable: true,
			want: []string{"new=0 old=3", "new=0 old=2", "new=1 old=2", "new=1 old=1", "new=2 old=1", "new=2 old=0", "new=3 old=0", "new=3 old=0"},
		},
		{
			name: "new pods never available: stops at the unavailability budget", replicas: 4,
			surge: intstr.FromInt32(1), unavl: intstr.FromInt32(1), podsAvailable: false,
			want: []string{"new=1 old=4", "new=1 old=3", "new=2 old=3", "new=2 old=3", "new=2 old=3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mkDeploy(tc.replicas, "v1", tc.surge, tc.unavl)
			c := &cluster{d: d, rss: []*appsv1.ReplicaSet{mkRS("web-old", "v1", 1, tc.replicas, tc.replicas, t0)}}
			c.d.Spec.Template = template("v2")
			c.d.Generation = 2
			surge, unavl, _ := ResolveFenceposts(&tc.surge, &tc.unavl, tc.replicas)
			var got []string
			for i := range tc.want {
				c.step(t, t0.Add(time.Duration(i+1)*time.Second))
				got = append(got, c.sizes())
				if total := sumSpec(c.rss); total > tc.replicas+surge {
					t.Fatalf("step %d: %d pods exceed replicas+maxSurge %d", i, total, tc.replicas+surge)
				}
				c.settle(tc.podsAvailable)
				if avail := sumAvailable(c.rss); avail < tc.replicas-unavl {
					t.Fatalf("step %d: %d available, below replicas-maxUnavailable %d", i, avail, tc.replicas-unavl)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("sequence:\n got %v\nwant %v", got, tc.want)
			}
			if tc.podsAvailable {
				c.step(t, t0.Add(time.Minute))
				if !deploymentComplete(c.d, &c.d.Status) {
					t.Fatalf("rollout not complete: %+v", c.d.Status)
				}
				if cond := GetCondition(c.d.Status, appsv1.DeploymentProgressing); cond == nil || cond.Reason != ReasonNewRSAvailable {
					t.Fatalf("progressing = %+v, want reason %s", cond, ReasonNewRSAvailable)
				}
				if c.d.Annotations[RevisionAnnotation] != "2" {
					t.Fatalf("deployment revision = %q, want 2", c.d.Annotations[RevisionAnnotation])
				}
			}
		})
	}
}

func TestProgressDeadline(t *testing.T) {
	d := mkDeploy(4, "v1", intstr.FromInt32(1), intstr.FromInt32(1))
	d.Spec.Template = template("v2")
	c := &cluster{d: d, rss: []*appsv1.ReplicaSet{mkRS("web-old", "v1", 1, 4, 4, t0)}}
	for i := range 4 {
		c.step(t, t0.Add(time.Duration(i)*time.Second))
		c.settle(false)
	}
	cond := GetCondition(c.d.Status, appsv1.DeploymentProgressing)
	if cond == nil || cond.Status != corev1.ConditionTrue {
		t.Fatalf("progressing before the deadline = %+v", cond)
	}
	newRS, old := SplitReplicaSets(c.d, c.rss)
	if p := Rolling(c.d, newRS, old, t0.Add(10*time.Second)); p.Status != nil || p.RequeueAfter <= 0 {
		t.Fatalf("stalled before deadline: status %v, requeue %v; want no write and a requeue", p.Status, p.RequeueAfter)
	}
	p := Rolling(c.d, newRS, old, t0.Add(11*time.Minute))
	c.apply(t, p)
	cond = GetCondition(c.d.Status, appsv1.DeploymentProgressing)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != ReasonTimedOut {
		t.Fatalf("progressing after the deadline = %+v, want False/%s", cond, ReasonTimedOut)
	}
	if av := GetCondition(c.d.Status, appsv1.DeploymentAvailable); av == nil || av.Status != corev1.ConditionTrue {
		t.Fatalf("available = %+v (3 of 4 available with maxUnavailable 1)", av)
	}
}

func TestRecreate(t *testing.T) {
	d := mkDeploy(3, "v2", intstr.FromInt32(0), intstr.FromInt32(0))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	old := mkRS("web-old", "v1", 1, 3, 3, t0)

	plan, need := Recreate(d, nil, []*appsv1.ReplicaSet{old}, true, t0)
	if need || len(plan.Actions) != 1 || plan.Actions[0].To != 0 {
		t.Fatalf("first step: need=%v actions=%+v; want old scaled to 0", need, plan.Actions)
	}
	scaled := plan.Actions[0].RS
	scaled.Status.Replicas = 0
	if plan, need = Recreate(d, nil, []*appsv1.ReplicaSet{scaled}, true, t0); need || len(plan.Actions) != 0 {
		t.Fatalf("old pods still running: need=%v actions=%v; want wait", need, plan.Actions)
	}
	if _, need = Recreate(d, nil, []*appsv1.ReplicaSet{scaled}, false, t0); !need {
		t.Fatal("old pods gone: want the new replicaset created")
	}
	nr := PlanNewReplicaSet(d, nil, []*appsv1.ReplicaSet{scaled}, true, t0)
	if rsReplicas(nr.Create) != 3 {
		t.Fatalf("recreate's new replicaset starts at %d, want 3", rsReplicas(nr.Create))
	}
}

func TestResolveFenceposts(t *testing.T) {
	for _, tc := range []struct {
		surge, unavail intstr.IntOrString
		desired        int32
		wantS, wantU   int32
	}{
		{intstr.FromString("25%"), intstr.FromString("25%"), 10, 3, 2},
		{intstr.FromString("10%"), intstr.FromString("10%"), 4, 1, 0},
		{intstr.FromInt32(0), intstr.FromInt32(0), 5, 0, 1},
		{intstr.FromInt32(1), intstr.FromString("50%"), 3, 1, 1},
		{intstr.FromString("100%"), intstr.FromString("0%"), 7, 7, 0},
	} {
		s, u, err := ResolveFenceposts(&tc.surge, &tc.unavail, tc.desired)
		if err != nil || s != tc.wantS || u != tc.wantU {
			t.Errorf("ResolveFenceposts(%v, %v, %d) = %d, %d, %v; want %d, %d", tc.surge.String(), tc.unavail.String(), tc.desired, s, u, err, tc.wantS, tc.wantU)
		}
	}
	bad := intstr.FromString("abc")
	if _, _, err := ResolveFenceposts(&bad, nil, 3); err == nil {
		t.Error("bad percentage: want an error")
	}
}

func TestProportionalScaling(t *testing.T) {
	// Mid-rollout at 10 replicas (max 13): old 8, new 5; scaled to 15.
	d := mkDeploy(15, "v2", intstr.FromString("25%"), intstr.FromString("25%"))
	old := mkRS("web-a", "v1", 1, 8, 8, t0)
	newRS := mkRS("web-b", "v2", 2, 5, 0, t0.Add(time.Minute))
	for _, rs := range []*appsv1.ReplicaSet{old, newRS} {
		setReplicasAnnotations(rs, 10, 13)
	}
	if !IsScalingEvent(d, newRS, []*appsv1.ReplicaSet{old}) {
		t.Fatal("replicas 10 → 15 must be a scaling event")
	}
	plan := Sync(d, newRS, []*appsv1.ReplicaSet{old}, t0)
	got := map[string]int32{}
	for _, a := range plan.Actions {
		got[a.RS.Name] = a.To
		if a.RS.Annotations[DesiredReplicasAnnotation] != "15" || a.RS.Annotations[MaxReplicasAnnotation] != "19" {
			t.Errorf("%s annotations = %v", a.RS.Name, a.RS.Annotations)
		}
	}
	if got["web-a"] != 12 || got["web-b"] != 7 {
		t.Fatalf("proportional sizes = %v, want web-a 12, web-b 7 (19 in all)", got)
	}
}

func TestRollbackBumpsRevision(t *testing.T) {
	d := mkDeploy(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	rs1 := mkRS("web-1", "v1", 1, 0, 0, t0)
	rs2 := mkRS("web-2", "v2", 2, 3, 3, t0.Add(time.Minute))
	newRS, old := SplitReplicaSets(d, []*appsv1.ReplicaSet{rs2, rs1})
	if newRS == nil || newRS.Name != "web-1" {
		t.Fatalf("new replicaset after rollback = %v, want web-1", newRS)
	}
	p := PlanNewReplicaSet(d, newRS, old, true, t0)
	if p.Update == nil || p.Update.Annotations[RevisionAnnotation] != "3" || p.Update.Annotations[RevisionHistoryAnnotation] != "1" {
		t.Fatalf("rolled-back replicaset update = %+v", p.Update)
	}
	if p.Deployment.Annotations[RevisionAnnotation] != "3" || p.Create != nil {
		t.Fatalf("deployment revision = %q, create = %v", p.Deployment.Annotations[RevisionAnnotation], p.Create)
	}
	if d.Annotations[RevisionAnnotation] != "" {
		t.Fatal("PlanNewReplicaSet modified its input")
	}
}

func TestAppendHistory(t *testing.T) {
	if got := appendHistory("", "4"); got != "4" {
		t.Fatalf("got %q", got)
	}
	if got := appendHistory("1,2", "4"); got != "1,2,4" {
		t.Fatalf("got %q", got)
	}
	long := ""
	for i := range 600 {
		if i > 0 {
			long += ","
		}
		long += strconv.Itoa(i)
	}
	got := appendHistory(long, "9999")
	if len(got) > MaxRevisionHistoryChars || got[len(got)-5:] != ",9999" {
		t.Fatalf("history of %d chars ending %q", len(got), got[len(got)-10:])
	}
}

func TestCleanupHistory(t *testing.T) {
	d := mkDeploy(2, "v9", intstr.FromInt32(1), intstr.FromInt32(0))
	limit := int32(1)
	d.Spec.RevisionHistoryLimit = &limit
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	terminating := mkRS("r0", "v0", 0, 0, 0, t0)
	terminating.Status.Replicas = 1 // scaled to 0, a pod still terminating
	old := []*appsv1.ReplicaSet{mkRS("r3", "v3", 3, 0, 0, t0), mkRS("r1", "v1", 1, 0, 0, t0), terminating, mkRS("r2", "v2", 2, 0, 0, t0)}
	newRS := mkRS("r9", "v9", 9, 2, 2, t0)
	var deleted []string
	for _, a := range Rolling(d, newRS, old, t0).Actions {
		if a.Kind == ActionDelete {
			deleted = append(deleted, a.RS.Name)
		}
	}
	// 4 old, limit 1: the 3 lowest revisions are candidates; r0 still has
	// a pod and is kept, so r1 and r2 go and r3 stays.
	if !slices.Equal(deleted, []string{"r1", "r2"}) {
		t.Fatalf("deleted %v, want [r1 r2]", deleted)
	}
}

func TestPausedCondition(t *testing.T) {
	d := mkDeploy(1, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.Paused = true
	st := d.Status
	if !PausedCondition(d, &st, t0) {
		t.Fatal("pausing must set a condition")
	}
	c := GetCondition(st, appsv1.DeploymentProgressing)
	if c.Status != corev1.ConditionUnknown || c.Reason != ReasonPaused {
		t.Fatalf("paused condition = %+v", c)
	}
	if PausedCondition(d, &st, t0) {
		t.Fatal("already paused: no change")
	}
	d.Spec.Paused = false
	if !PausedCondition(d, &st, t0.Add(time.Hour)) || GetCondition(st, appsv1.DeploymentProgressing).Reason != ReasonResumed {
		t.Fatalf("resume: %+v", st.Conditions)
	}
}

func TestComputeHash(t *testing.T) {
	a, b := template("v1"), template("v2")
	h1 := ComputeHash(&a, nil)
	if h1 != ComputeHash(&a, nil) {
		t.Fatal("hash not deterministic")
	}
	one := int32(1)
	if h1 == ComputeHash(&b, nil) || h1 == ComputeHash(&a, &one) {
		t.Fatal("template or collision count change must change the hash")
	}
	for _, r := range h1 {
		if !strconv.IsPrint(r) || r == 'a' || r == 'e' || r == 'i' || r == 'o' || r == 'u' {
			t.Fatalf("hash %q is not safe-encoded", h1)
		}
	}
	d := mkDeploy(2, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	p := PlanNewReplicaSet(d, nil, nil, true, t0)
	if p.Create.Name != "web-"+h1 || p.Create.Spec.Template.Labels[PodTemplateHashLabel] != h1 || p.Create.Spec.Selector.MatchLabels[PodTemplateHashLabel] != h1 {
		t.Fatalf("new replicaset %s labels %v selector %v", p.Create.Name, p.Create.Spec.Template.Labels, p.Create.Spec.Selector)
	}
	if d.Spec.Template.Labels[PodTemplateHashLabel] != "" {
		t.Fatal("deployment template modified")
	}
}

// TestRollingNeverScalesUpOldReplicaSetWithLaggingStatus: an old
// ReplicaSet just scaled down still reports its earlier available pods
// (the ReplicaSet controller has not deleted them yet). The unhealthy-pod
// cleanup once computed a negative count for it and scaled it back up,
// taking the spec total past replicas+maxSurge (seen in the integration
// test as 3 → 4 → 5). The step must wait for the status instead, as
// upstream's does; once the status catches up the rollout goes on.
func TestRollingNeverScalesUpOldReplicaSetWithLaggingStatus(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		oldSpec, oldAvailable int32
		newSpec, newAvailable int32
		want                  map[string]int32 // ReplicaSet → spec after the step (absent: unchanged)
	}{
		{name: "old scaled 2→1, two pods still available; new at 3, all available",
			oldSpec: 1, oldAvailable: 2, newSpec: 3, newAvailable: 3, want: map[string]int32{}},
		{name: "old scaled 3→1, three pods still available",
			oldSpec: 1, oldAvailable: 3, newSpec: 3, newAvailable: 3, want: map[string]int32{}},
		{name: "status caught up: old goes to 0",
			oldSpec: 1, oldAvailable: 1, newSpec: 3, newAvailable: 3, want: map[string]int32{"web-old": 0}},
		{name: "old has an unhealthy pod: cleaned up",
			oldSpec: 2, oldAvailable: 1, newSpec: 2, newAvailable: 2, want: map[string]int32{"web-old": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mkDeploy(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
			d.Generation = 2
			old := mkRS("web-old", "v1", 1, tc.oldSpec, tc.oldAvailable, t0)
			newRS := mkRS("web-new", "v2", 2, tc.newSpec, tc.newAvailable, t0.Add(time.Minute))
			for _, rs := range []*appsv1.ReplicaSet{old, newRS} {
				setReplicasAnnotations(rs, 3, 4)
			}
			plan := Rolling(d, newRS, []*appsv1.ReplicaSet{old}, t0.Add(2*time.Minute))
			got := map[string]int32{}
			sizes := map[string]int32{old.Name: tc.oldSpec, newRS.Name: tc.newSpec}
			for _, a := range plan.Actions {
				if a.Kind != ActionScale {
					continue
				}
				if a.To > a.From && a.RS.Name == old.Name {
					t.Errorf("old replicaset scaled up %d → %d", a.From, a.To)
				}
				got[a.RS.Name] = a.To
				sizes[a.RS.Name] = a.To
				if total := sizes[old.Name] + sizes[newRS.Name]; total > 4 {
					t.Errorf("after scaling %s to %d: %d pods exceed replicas+maxSurge 4", a.RS.Name, a.To, total)
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("scaled %v, want %v", got, tc.want)
			}
		})
	}
}
