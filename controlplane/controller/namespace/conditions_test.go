package namespace

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestProgressConditions(t *testing.T) {
	cm := corev1.SchemeGroupVersion.WithResource("configmaps")
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	type want struct {
		status  corev1.ConditionStatus
		reason  string
		message string
	}
	for _, tc := range []struct {
		name string
		p    progress
		want map[corev1.NamespaceConditionType]want
	}{{
		name: "nothing left: every condition False with upstream's reasons",
		p:    progress{},
		want: map[corev1.NamespaceConditionType]want{
			corev1.NamespaceDeletionDiscoveryFailure: {corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered"},
			corev1.NamespaceDeletionGVParsingFailure: {corev1.ConditionFalse, "ParsedGroupVersions", "All legacy kube types successfully parsed"},
			corev1.NamespaceDeletionContentFailure:   {corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
			corev1.NamespaceContentRemaining:         {corev1.ConditionFalse, "ContentRemoved", "All content successfully removed"},
			corev1.NamespaceFinalizersRemaining:      {corev1.ConditionFalse, "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
		},
	}, {
		name: "pods left behind finalizers",
		p: progress{
			remaining:  map[schema.GroupVersionResource]int{podsGVR: 2, cm: 0},
			finalizers: map[string]int{"e2e.example.com/finalizer": 2, "b/f": 1},
		},
		want: map[corev1.NamespaceConditionType]want{
			corev1.NamespaceDeletionContentFailure: {corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
			corev1.NamespaceContentRemaining:       {corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: pods. has 2 resource instances"},
			corev1.NamespaceFinalizersRemaining:    {corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: b/f in 1 resource instances, e2e.example.com/finalizer in 2 resource instances"},
		},
	}, {
		name: "discovery and deletion failures",
		p: progress{
			discoveryErr: errors.New("unable to retrieve the complete list of server APIs: wardle.example.com/v1alpha1: 503"),
			deleteErrs:   []error{errors.New("deleting b"), errors.New("deleting a")},
			remaining:    map[schema.GroupVersionResource]int{widgets: 1},
		},
		want: map[corev1.NamespaceConditionType]want{
			corev1.NamespaceDeletionDiscoveryFailure: {corev1.ConditionTrue, "DiscoveryFailed", "unable to retrieve the complete list of server APIs: wardle.example.com/v1alpha1: 503"},
			corev1.NamespaceDeletionContentFailure:   {corev1.ConditionTrue, "ContentDeletionFailed", "Failed to delete all resource types, 2 remaining: deleting a, deleting b"},
			corev1.NamespaceContentRemaining:         {corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 1 resource instances"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.conditions()
			if len(got) != len(conditionTypes) {
				t.Fatalf("%d conditions, want one of each of %d types", len(got), len(conditionTypes))
			}
			for i, c := range got {
				if c.Type != conditionTypes[i] {
					t.Errorf("condition %d is %s, want %s", i, c.Type, conditionTypes[i])
				}
				w, ok := tc.want[c.Type]
				if !ok {
					continue
				}
				if c.Status != w.status || c.Reason != w.reason || c.Message != w.message {
					t.Errorf("%s = %s %s %q, want %s %s %q", c.Type, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
			}
		})
	}
}

func TestMergeConditions(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Minute))
	status := corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "pods 2", LastTransitionTime: then},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "ok", LastTransitionTime: then},
	}}
	want := []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "pods 1"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "ok"},
		{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse, Reason: "ContentDeleted", Message: "ok"},
	}
	if !mergeConditions(&status, want, now) {
		t.Fatal("merge reported no change")
	}
	byType := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	for _, c := range status.Conditions {
		byType[c.Type] = c
	}
	if c := byType[corev1.NamespaceContentRemaining]; c.Message != "pods 1" || !c.LastTransitionTime.Equal(&then) {
		t.Errorf("message-only change: %+v, want the new message and the old transition time", c)
	}
	if c := byType[corev1.NamespaceDeletionContentFailure]; !c.LastTransitionTime.Equal(&now) {
		t.Errorf("new condition: %+v, want transition time now", c)
	}
	if mergeConditions(&status, want, now) {
		t.Error("merging the same conditions again reported a change")
	}
	flip := []corev1.NamespaceCondition{{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "done"}}
	later := metav1.NewTime(now.Add(time.Minute))
	mergeConditions(&status, flip, later)
	if c := status.Conditions[0]; c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Equal(&later) {
		t.Errorf("status flip: %+v, want False at the later time", c)
	}
}
