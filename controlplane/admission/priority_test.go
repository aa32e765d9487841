package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	kptr "k8s.io/utils/ptr"

	berthadm "berth/controlplane/admission"
)

func TestPriority(t *testing.T) {
	never := corev1.PreemptNever
	lower := corev1.PreemptLowerPriority
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: &lower}
	quiet := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, Value: 10, PreemptionPolicy: &never}
	dflt := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "dflt"}, Value: 5, GlobalDefault: true, PreemptionPolicy: &lower}
	late := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Value: 7}
	newPlugin := func(classes ...any) *berthadm.Priority {
		p, err := berthadm.NewPriority(berthadm.PriorityConfig{
			PriorityClasses: schedulinglisters.NewPriorityClassLister(indexer(t, classes...)),
			Client:          fake.NewClientset(late),
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	withClass := func(class string, mutate func(*corev1.Pod)) *corev1.Pod {
		pod := newPod("ns", "p")
		pod.Spec.PriorityClassName = class
		if mutate != nil {
			mutate(pod)
		}
		return pod
	}
	for _, tc := range []struct {
		name      string
		classes   []any
		pod       *corev1.Pod
		want      string // refusal message, "" admitted
		wantClass string
		wantPrio  int32
		wantPol   *corev1.PreemptionPolicy
	}{
		{name: "no class, no default", classes: []any{high}, pod: withClass("", nil), wantPrio: 0, wantPol: &lower},
		{name: "no class, the global default", classes: []any{high, dflt}, pod: withClass("", nil), wantClass: "dflt", wantPrio: 5, wantPol: &lower},
		{name: "class resolved", classes: []any{high, dflt}, pod: withClass("high", nil), wantClass: "high", wantPrio: 1000, wantPol: &lower},
		{name: "preemption policy from the class", classes: []any{quiet}, pod: withClass("quiet", nil), wantClass: "quiet", wantPrio: 10, wantPol: &never},
		{name: "class only in the live store", pod: withClass("late", nil), wantClass: "late", wantPrio: 7},
		{name: "unknown class", classes: []any{high}, pod: withClass("nope", nil), want: "no PriorityClass with name nope was found"},
		{name: "same priority given", classes: []any{high}, pod: withClass("high", func(p *corev1.Pod) { p.Spec.Priority = kptr.To[int32](1000) }),
			wantClass: "high", wantPrio: 1000, wantPol: &lower},
		{name: "priority without its class", classes: []any{high}, pod: withClass("", func(p *corev1.Pod) { p.Spec.Priority = kptr.To[int32](1000) }),
			want: "the integer value of priority (1000) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"},
		{name: "different preemption policy", classes: []any{high}, pod: withClass("high", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = &never }),
			want: "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := admit(context.Background(), newPlugin(tc.classes...), podCreate(tc.pod, alice))
			if tc.want != "" {
				wantStatus(t, err, 403, tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.pod.Spec.PriorityClassName != tc.wantClass {
				t.Errorf("priorityClassName = %q, want %q", tc.pod.Spec.PriorityClassName, tc.wantClass)
			}
			if tc.pod.Spec.Priority == nil || *tc.pod.Spec.Priority != tc.wantPrio {
				t.Errorf("priority = %v, want %d", tc.pod.Spec.Priority, tc.wantPrio)
			}
			if !kptr.Equal(tc.pod.Spec.PreemptionPolicy, tc.wantPol) {
				t.Errorf("preemptionPolicy = %v, want %v", kptr.Deref(tc.pod.Spec.PreemptionPolicy, ""), kptr.Deref(tc.wantPol, ""))
			}
		})
	}

	t.Run("update keeps the old priority", func(t *testing.T) {
		old := withClass("high", func(p *corev1.Pod) { p.Spec.Priority = kptr.To[int32](1000); p.Spec.PreemptionPolicy = &lower })
		pod := withClass("high", nil)
		upd := admission.NewAttributesRecord(pod, old, podGVK, "ns", "p", podGVR, "", admission.Update, &metav1.UpdateOptions{}, false, alice)
		if err := admit(context.Background(), newPlugin(), upd); err != nil {
			t.Fatal(err)
		}
		if kptr.Deref(pod.Spec.Priority, 0) != 1000 || !kptr.Equal(pod.Spec.PreemptionPolicy, &lower) {
			t.Errorf("priority %v policy %v, want the old pod's", pod.Spec.Priority, pod.Spec.PreemptionPolicy)
		}
	})

	pcGVK := schedulingv1.SchemeGroupVersion.WithKind("PriorityClass")
	pcGVR := schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")
	t.Run("a second global default refused", func(t *testing.T) {
		second := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "second"}, Value: 9, GlobalDefault: true}
		err := admit(context.Background(), newPlugin(dflt), createAttrs(second, pcGVK, pcGVR, "", "second", alice))
		wantStatus(t, err, 403, "PriorityClass dflt is already marked as default. Only one default can exist")
	})
	t.Run("the default itself may be updated", func(t *testing.T) {
		upd := admission.NewAttributesRecord(dflt.DeepCopy(), dflt, pcGVK, "", "dflt", pcGVR, "", admission.Update, &metav1.UpdateOptions{}, false, alice)
		if err := admit(context.Background(), newPlugin(dflt), upd); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a first global default admitted", func(t *testing.T) {
		if err := admit(context.Background(), newPlugin(high), createAttrs(dflt.DeepCopy(), pcGVK, pcGVR, "", "dflt", alice)); err != nil {
			t.Fatal(err)
		}
	})
}
