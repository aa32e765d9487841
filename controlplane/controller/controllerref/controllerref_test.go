package controllerref

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string, lbl map[string]string, ctrl types.UID, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbl, UID: types.UID("uid-" + name)}}
	if ctrl != "" {
		t := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", UID: ctrl, Controller: &t}}
	}
	if deleting {
		now := metav1.NewTime(time.Unix(100, 0))
		p.DeletionTimestamp = &now
	}
	return p
}

func names(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestPlan(t *testing.T) {
	match := map[string]string{"app": "a"}
	other := map[string]string{"app": "b"}
	cands := []*corev1.Pod{
		pod("mine", match, "owner", false),
		pod("mine-mismatch", other, "owner", false),
		pod("theirs", match, "someone", false),
		pod("orphan", match, "", false),
		pod("orphan-mismatch", other, "", false),
		pod("orphan-deleting", match, "", true),
	}
	sel := labels.SelectorFromSet(match)
	for _, tc := range []struct {
		name                   string
		deleting               bool
		owned, adopt, released []string
	}{
		{name: "live owner", owned: []string{"mine"}, adopt: []string{"orphan"}, released: []string{"mine-mismatch"}},
		{name: "owner being deleted neither adopts nor releases", deleting: true, owned: []string{"mine"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner := &metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "owner"}
			if tc.deleting {
				now := metav1.Now()
				owner.DeletionTimestamp = &now
			}
			c := Plan(owner, sel, cands)
			for _, cmp := range []struct {
				what      string
				got, want []string
			}{{"owned", names(c.Owned), tc.owned}, {"adopt", names(c.Adopt), tc.adopt}, {"release", names(c.Release), tc.released}} {
				if len(cmp.got) != len(cmp.want) {
					t.Fatalf("%s = %v, want %v", cmp.what, cmp.got, cmp.want)
				}
				for i := range cmp.got {
					if cmp.got[i] != cmp.want[i] {
						t.Fatalf("%s = %v, want %v", cmp.what, cmp.got, cmp.want)
					}
				}
			}
		})
	}
}

func TestPatches(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "o-uid"}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	var adopt map[string]map[string]any
	if err := json.Unmarshal(AdoptPatch(owner, gvk, "p-uid"), &adopt); err != nil {
		t.Fatal(err)
	}
	refs := adopt["metadata"]["ownerReferences"].([]any)
	ref := refs[0].(map[string]any)
	if ref["apiVersion"] != "apps/v1" || ref["kind"] != "ReplicaSet" || ref["uid"] != "o-uid" || ref["controller"] != true || ref["blockOwnerDeletion"] != true || adopt["metadata"]["uid"] != "p-uid" {
		t.Fatalf("adopt patch = %v", adopt)
	}
	var rel map[string]map[string]any
	if err := json.Unmarshal(ReleasePatch("o-uid", "p-uid"), &rel); err != nil {
		t.Fatal(err)
	}
	ref = rel["metadata"]["ownerReferences"].([]any)[0].(map[string]any)
	if ref["$patch"] != "delete" || ref["uid"] != "o-uid" || rel["metadata"]["uid"] != "p-uid" {
		t.Fatalf("release patch = %v", rel)
	}
}
