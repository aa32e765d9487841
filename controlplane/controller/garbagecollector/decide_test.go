package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func ref(uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(uid), UID: uid, BlockOwnerDeletion: &block}
}

func TestDecideDependent(t *testing.T) {
	two := []metav1.OwnerReference{ref("a", true), ref("b", false)}
	for _, tc := range []struct {
		name       string
		refs       []metav1.OwnerReference
		states     map[types.UID]OwnerState
		finalizers []string
		deps       Dependents
		want       DependentAction
	}{
		{"no owners", nil, nil, nil, Dependents{}, DependentAction{}},
		{"owner alive", two[:1], map[types.UID]OwnerState{"a": OwnerSolid}, nil, Dependents{}, DependentAction{}},
		{"owner gone: background", two[:1], map[types.UID]OwnerState{"a": OwnerAbsent}, nil, Dependents{}, DependentAction{Delete: true, Policy: metav1.DeletePropagationBackground}},
		{"one of two gone: drop the dangling ref", two, map[types.UID]OwnerState{"a": OwnerSolid, "b": OwnerAbsent}, nil, Dependents{}, DependentAction{RemoveRefs: []types.UID{"b"}}},
		{"solid and waiting owners: drop the waiting ref", two, map[types.UID]OwnerState{"a": OwnerWaiting, "b": OwnerSolid}, nil, Dependents{}, DependentAction{RemoveRefs: []types.UID{"a"}}},
		{"owner in foreground, dependent has dependents: foreground", two[:1], map[types.UID]OwnerState{"a": OwnerWaiting}, nil, Dependents{Any: true}, DependentAction{Delete: true, Policy: metav1.DeletePropagationForeground}},
		{"owner in foreground, a dependent waits too (a circle): unblock, then foreground", two[:1], map[types.UID]OwnerState{"a": OwnerWaiting}, nil, Dependents{Any: true, Waiting: true}, DependentAction{Unblock: true, Delete: true, Policy: metav1.DeletePropagationForeground}},
		{"owner in foreground, leaf dependent: background", two[:1], map[types.UID]OwnerState{"a": OwnerWaiting}, nil, Dependents{}, DependentAction{Delete: true, Policy: metav1.DeletePropagationBackground}},
		{"own orphan finalizer wins", two[:1], map[types.UID]OwnerState{"a": OwnerAbsent}, []string{FinalizerOrphan}, Dependents{}, DependentAction{Delete: true, Policy: metav1.DeletePropagationOrphan}},
		{"own foreground finalizer", two[:1], map[types.UID]OwnerState{"a": OwnerAbsent}, []string{FinalizerForeground}, Dependents{}, DependentAction{Delete: true, Policy: metav1.DeletePropagationForeground}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideDependent(tc.refs, tc.states, tc.finalizers, tc.deps)
			if got.Delete != tc.want.Delete || got.Unblock != tc.want.Unblock || got.Policy != tc.want.Policy || !slices.Equal(got.RemoveRefs, tc.want.RemoveRefs) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestForegroundDone(t *testing.T) {
	if !ForegroundDone("o", nil) {
		t.Fatal("no dependents: done")
	}
	if ForegroundDone("o", [][]metav1.OwnerReference{{ref("x", true)}, {ref("o", true)}}) {
		t.Fatal("a blocking dependent remains: not done")
	}
	if !ForegroundDone("o", [][]metav1.OwnerReference{{ref("o", false)}, {ref("x", true)}}) {
		t.Fatal("only non-blocking dependents: done")
	}
}

func TestUnblocked(t *testing.T) {
	in := []metav1.OwnerReference{ref("a", true), ref("b", false), {UID: "c"}}
	out := unblocked(in)
	for i, r := range out {
		if r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			t.Errorf("ref %d still blocks: %+v", i, r)
		}
	}
	if !*in[0].BlockOwnerDeletion || out[2].BlockOwnerDeletion != nil || out[0].UID != "a" {
		t.Fatalf("input modified or refs changed: in %+v, out %+v", in, out)
	}
}

func TestWithout(t *testing.T) {
	refs := withoutRefs([]metav1.OwnerReference{ref("a", true), ref("b", true)}, []types.UID{"a"})
	if len(refs) != 1 || refs[0].UID != "b" {
		t.Fatalf("refs = %v", refs)
	}
	if got := withoutRefs([]metav1.OwnerReference{ref("a", true)}, []types.UID{"a"}); got == nil || len(got) != 0 {
		t.Fatalf("all removed must be an empty (not nil) list so the patch clears it: %v", got)
	}
	if got := withoutFinalizer([]string{"orphan", "x"}, "orphan"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("finalizers = %v", got)
	}
}

func TestMetadataOnly(t *testing.T) {
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "uid": "u", "ownerReferences": []any{map[string]any{"uid": "o"}}, "managedFields": []any{"x"}},
		"spec":     map[string]any{"nodeName": "n"},
		"status":   map[string]any{"phase": "Running"},
	}}
	out, err := metadataOnly(in)
	if err != nil {
		t.Fatal(err)
	}
	u := out.(*unstructured.Unstructured)
	if _, ok := u.Object["spec"]; ok {
		t.Fatal("spec kept")
	}
	if _, ok := u.Object["status"]; ok {
		t.Fatal("status kept")
	}
	md := u.Object["metadata"].(map[string]any)
	if _, ok := md["managedFields"]; ok || u.GetName() != "p" || string(u.GetUID()) != "u" || len(u.GetOwnerReferences()) != 1 || u.GetKind() != "Pod" {
		t.Fatalf("metadata = %v", u.Object)
	}
	if _, ok := in.Object["metadata"].(map[string]any)["managedFields"]; !ok {
		t.Fatal("input modified")
	}
}
