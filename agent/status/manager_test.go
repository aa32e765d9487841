package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestManagerDropsStaleWritesAndCountsChanges(t *testing.T) {
	m := NewManager()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: "u1"}}
	if !m.Set(p, v1.PodStatus{Phase: v1.PodPending}, 1) {
		t.Fatal("first write reported no change")
	}
	if m.Set(p, v1.PodStatus{Phase: v1.PodPending}, 2) {
		t.Fatal("identical status reported as a change")
	}
	if !m.Set(p, v1.PodStatus{Phase: v1.PodRunning}, 4) {
		t.Fatal("new phase not stored")
	}
	if m.Set(p, v1.PodStatus{Phase: v1.PodPending}, 3) {
		t.Fatal("a stale write (seq 3 after 4) was stored")
	}
	got, version, ok := m.Get("u1")
	if !ok || got.Status.Phase != v1.PodRunning || version != 2 {
		t.Fatalf("Get = %v %d %v, want Running version 2", got.Status.Phase, version, ok)
	}
	got.Status.Phase = v1.PodFailed // a copy: the manager's state is unchanged
	if st, _ := m.Status("u1"); st.Phase != v1.PodRunning {
		t.Fatal("Get returned shared state")
	}
	m.Set(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u2"}}, v1.PodStatus{}, 1)
	list := m.List()
	if len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Fatalf("List = %v", list)
	}
	m.Delete("u1")
	if _, _, ok := m.Get("u1"); ok || len(m.List()) != 1 {
		t.Fatal("Delete left the pod")
	}
}
