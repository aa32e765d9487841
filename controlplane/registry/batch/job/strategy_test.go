package job

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"berth/internal/api/scheme"
)

// newJob returns a defaulted job as the apiserver would create it.
func newJob(t *testing.T) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: types.UID("uid-1"), ResourceVersion: "1"},
		Spec: batchv1.JobSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}}}}}
	s := scheme.New()
	s.Default(j)
	st := Kind.Strategy(s)
	j.Status.Active = 3
	st.PrepareForCreate(context.Background(), j)
	if errs := st.Validate(context.Background(), j); len(errs) != 0 {
		t.Fatalf("valid job refused: %v", errs)
	}
	return j
}

func TestCreateGeneratesSelectorAndDefaults(t *testing.T) {
	j := newJob(t)
	for k, want := range map[string]string{"batch.kubernetes.io/controller-uid": "uid-1", "controller-uid": "uid-1",
		"batch.kubernetes.io/job-name": "pi", "job-name": "pi"} {
		if got := j.Spec.Template.Labels[k]; got != want {
			t.Errorf("template label %s = %q, want %q", k, got, want)
		}
	}
	if got := j.Spec.Selector.MatchLabels; len(got) != 1 || got["batch.kubernetes.io/controller-uid"] != "uid-1" {
		t.Errorf("selector = %v", got)
	}
	if j.Status.Active != 0 || j.Generation != 1 {
		t.Errorf("status %+v generation %d", j.Status, j.Generation)
	}
	if *j.Spec.Completions != 1 || *j.Spec.Parallelism != 1 || *j.Spec.BackoffLimit != 6 || *j.Spec.CompletionMode != batchv1.NonIndexedCompletion ||
		*j.Spec.Suspend || *j.Spec.ManualSelector || *j.Spec.PodReplacementPolicy != batchv1.TerminatingOrFailed {
		t.Errorf("defaults: %+v", j.Spec)
	}
}

func TestUpdateRules(t *testing.T) {
	ctx := context.Background()
	st := Kind.Strategy(scheme.New())
	for _, tc := range []struct {
		name    string
		prepare func(old *batchv1.Job)
		change  func(j *batchv1.Job)
		want    string // "" for accepted, else "field: message" of one error
	}{
		{name: "parallelism may change", change: func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4) }},
		{name: "template is immutable", change: func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "busybox:2" },
			want: "spec.template: Invalid value"},
		{name: "completions immutable when NonIndexed", change: func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](3) },
			want: "spec.completions: Invalid value"},
		{name: "selector immutable", change: func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["x"] = "y"; j.Spec.Template.Labels["x"] = "y" },
			want: "spec.selector: Invalid value"},
		{name: "suspended unstarted job may change node selector",
			prepare: func(old *batchv1.Job) { old.Spec.Suspend = ptr.To(true) },
			change: func(j *batchv1.Job) {
				j.Spec.Suspend = ptr.To(true)
				j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
			}},
		{name: "started suspended job may not change node selector",
			prepare: func(old *batchv1.Job) {
				old.Spec.Suspend = ptr.To(true)
				old.Status.StartTime = &metav1.Time{Time: time.Now()}
			},
			change: func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} },
			want:   "spec.template: Invalid value"},
		{name: "indexed completions change with parallelism",
			prepare: func(old *batchv1.Job) { old.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) },
			change:  func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](5) },
			want:    "spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := newJob(t)
			if tc.prepare != nil {
				tc.prepare(old)
			}
			j := old.DeepCopy()
			tc.change(j)
			st.PrepareForUpdate(ctx, j, old)
			errs := st.ValidateUpdate(ctx, j, old)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				if j.Generation != old.Generation+1 {
					t.Errorf("generation %d after a spec change from %d", j.Generation, old.Generation)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestStatusUpdateRules(t *testing.T) {
	ctx := context.Background()
	st := Kind.StatusStrategy(scheme.New())
	now := metav1.Now()
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: v1.ConditionTrue}
	}
	for _, tc := range []struct {
		name   string
		status batchv1.JobStatus
		want   string
	}{
		{name: "counts", status: batchv1.JobStatus{Active: 1, StartTime: &now, Ready: ptr.To[int32](1)}},
		{name: "negative active", status: batchv1.JobStatus{Active: -1}, want: "status.active: Invalid value: -1: must be greater than or equal to 0"},
		{name: "more ready than active", status: batchv1.JobStatus{Active: 1, Ready: ptr.To[int32](2)},
			want: "status.ready: Invalid value: 2: cannot set more ready pods than active"},
		{name: "complete without SuccessCriteriaMet", status: batchv1.JobStatus{StartTime: &now, CompletionTime: &now,
			Conditions: []batchv1.JobCondition{cond(batchv1.JobComplete)}},
			want: "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition"},
		{name: "failed without FailureTarget", status: batchv1.JobStatus{StartTime: &now, Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed)}},
			want: "cannot set Failed=True condition without the FailureTarget=true condition"},
		{name: "finished with active pods", status: batchv1.JobStatus{Active: 1, StartTime: &now,
			Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}},
			want: "status.active: Invalid value: 1: active>0 is invalid for finished job"},
		{name: "completed indexes on a NonIndexed job", status: batchv1.JobStatus{CompletedIndexes: "0"},
			want: "cannot set non-empty completedIndexes when non-indexed completion mode"},
		{name: "uncounted pod twice", status: batchv1.JobStatus{UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a"}, Failed: []types.UID{"a"}}},
			want: "status.uncountedTerminatedPods.failed[0]: Duplicate value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := newJob(t)
			j := old.DeepCopy()
			j.Status = tc.status
			j.Spec.Parallelism = ptr.To[int32](9) // dropped: /status keeps the spec
			st.PrepareForUpdate(ctx, j, old)
			if *j.Spec.Parallelism != 1 {
				t.Fatal("status update changed the spec")
			}
			errs := st.ValidateUpdate(ctx, j, old)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestDecreasingSucceededRefused(t *testing.T) {
	old := newJob(t)
	old.Status.Succeeded = 2
	j := old.DeepCopy()
	j.Status.Succeeded = 1
	errs := Kind.StatusStrategy(scheme.New()).ValidateUpdate(context.Background(), j, old)
	want := field.Invalid(field.NewPath("status", "succeeded"), int32(1), "cannot decrease the succeeded counter").Error()
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors %v, want %q", errs, want)
	}
}

func TestTableAndFieldSelector(t *testing.T) {
	j := newJob(t)
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(90 * time.Second))
	j.Status = batchv1.JobStatus{Succeeded: 1, StartTime: &start, CompletionTime: &end,
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: v1.ConditionTrue}, {Type: batchv1.JobComplete, Status: v1.ConditionTrue}}}
	out, err := Kind.Table.ConvertToTable(context.Background(), j, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Rows[0].Cells
	if c[0] != "pi" || c[1] != "Complete" || c[2] != "1/1" || c[3] != "90s" || c[5] != "c" || c[6] != "busybox:1" ||
		c[7] != "batch.kubernetes.io/controller-uid=uid-1" {
		t.Errorf("cells = %v", c)
	}
	var names []string
	for _, col := range out.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if got := strings.Join(names, " "); got != "Name Status Completions Duration Age Containers Images Selector" {
		t.Errorf("columns = %s", got)
	}
	for _, tc := range []struct {
		job  func(*batchv1.Job)
		want string
	}{
		{func(j *batchv1.Job) { j.Status.Conditions = nil }, "Running"},
		{func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: v1.ConditionTrue}}
		}, "Suspended"},
		{func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: v1.ConditionTrue}, {Type: batchv1.JobFailed, Status: v1.ConditionTrue}}
		}, "Failed"},
	} {
		k := j.DeepCopy()
		tc.job(k)
		if got := Status(k); got != tc.want {
			t.Errorf("Status = %q, want %q", got, tc.want)
		}
	}
	k := j.DeepCopy()
	k.Spec.Completions = nil
	k.Spec.Parallelism = ptr.To[int32](3)
	if got := Completions(k); got != "1/1 of 3" {
		t.Errorf("work-queue COMPLETIONS = %q", got)
	}
	pred := Kind.Predicate(labels.Everything(), fields.OneTermEqualSelector("status.successful", "1"))
	if ok, _ := pred.Matches(j); !ok {
		t.Error("status.successful=1 did not match")
	}
}
