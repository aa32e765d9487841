package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	nodelisters "k8s.io/client-go/listers/node/v1"

	berthadm "berth/controlplane/admission"
)

func TestRuntimeClass(t *testing.T) {
	overhead := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("1Mi")}
	plain := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "runc"}
	heavy := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "heavy"}, Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: overhead}}
	sched := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "sched"}, Handler: "runsc", Scheduling: &nodev1.Scheduling{
		NodeSelector: map[string]string{"sandbox": "gvisor"},
		Tolerations:  []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists}, {Key: "a", Operator: corev1.TolerationOpEqual, Value: "1", Effect: corev1.TaintEffectNoSchedule}},
	}}
	// "late" is only in the live store, not yet in the informer cache.
	late := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Handler: "runc"}
	p, err := berthadm.NewRuntimeClass(berthadm.RuntimeClassConfig{
		RuntimeClasses: nodelisters.NewRuntimeClassLister(indexer(t, plain, heavy, sched)),
		Client:         fake.NewClientset(late),
	})
	if err != nil {
		t.Fatal(err)
	}
	withClass := func(class string, mutate func(*corev1.Pod)) *corev1.Pod {
		pod := newPod("ns", "p")
		if class != "" {
			pod.Spec.RuntimeClassName = &class
		}
		if mutate != nil {
			mutate(pod)
		}
		return pod
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		want  string // refusal message, "" admitted
		check func(t *testing.T, pod *corev1.Pod)
	}{
		{name: "no class", pod: withClass("", nil)},
		{name: "missing class", pod: withClass("nope", nil), want: `pod rejected: RuntimeClass "nope" not found`},
		{name: "class only in the live store", pod: withClass("late", nil)},
		{name: "class without overhead", pod: withClass("plain", nil), check: func(t *testing.T, pod *corev1.Pod) {
			if len(pod.Spec.Overhead) != 0 {
				t.Errorf("overhead = %v, want none", pod.Spec.Overhead)
			}
		}},
		{name: "overhead set from the class", pod: withClass("heavy", nil), check: func(t *testing.T, pod *corev1.Pod) {
			if !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, overhead) {
				t.Errorf("overhead = %v, want %v", pod.Spec.Overhead, overhead)
			}
		}},
		{name: "same overhead given", pod: withClass("heavy", func(p *corev1.Pod) { p.Spec.Overhead = overhead.DeepCopy() })},
		{name: "different overhead given", pod: withClass("heavy", func(p *corev1.Pod) {
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}), want: "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
		{name: "overhead without a class defining one", pod: withClass("plain", func(p *corev1.Pod) { p.Spec.Overhead = overhead.DeepCopy() }),
			want: "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
		{name: "scheduling merged", pod: withClass("sched", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}
		}), check: func(t *testing.T, pod *corev1.Pod) {
			if want := map[string]string{"disk": "ssd", "sandbox": "gvisor"}; !apiequality.Semantic.DeepEqual(pod.Spec.NodeSelector, want) {
				t.Errorf("nodeSelector = %v, want %v", pod.Spec.NodeSelector, want)
			}
			// The class's a=1:NoSchedule is covered by the pod's a:Exists.
			want := []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}, {Key: "sandbox", Operator: corev1.TolerationOpExists}}
			if !apiequality.Semantic.DeepEqual(pod.Spec.Tolerations, want) {
				t.Errorf("tolerations = %v, want %v", pod.Spec.Tolerations, want)
			}
		}},
		{name: "conflicting node selector", pod: withClass("sched", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"sandbox": "kata"} }),
			want: "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := admit(context.Background(), p, podCreate(tc.pod, alice))
			if tc.want != "" {
				wantStatus(t, err, 403, tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, tc.pod)
			}
		})
	}

	// Updates and subresources are not its business.
	upd := admission.NewAttributesRecord(withClass("nope", nil), withClass("nope", nil), podGVK, "ns", "p", podGVR, "", admission.Update, &metav1.UpdateOptions{}, false, alice)
	if err := admit(context.Background(), p, upd); err != nil {
		t.Errorf("update: %v", err)
	}
}

func TestMergeTolerations(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	exists := corev1.Toleration{Operator: corev1.TolerationOpExists}
	noExec300 := corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(300)}
	noExec60 := corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(60)}
	eq := corev1.Toleration{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v"}
	for _, tc := range []struct {
		name          string
		first, second []corev1.Toleration
		want          []corev1.Toleration
	}{
		{"disjoint", []corev1.Toleration{eq}, []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpExists}}, []corev1.Toleration{eq, {Key: "x", Operator: corev1.TolerationOpExists}}},
		{"duplicates kept once", []corev1.Toleration{eq}, []corev1.Toleration{eq}, []corev1.Toleration{eq}},
		{"match-all covers everything", []corev1.Toleration{eq, noExec60}, []corev1.Toleration{exists}, []corev1.Toleration{exists}},
		{"longer NoExecute covers shorter", []corev1.Toleration{noExec60}, []corev1.Toleration{noExec300}, []corev1.Toleration{noExec300}},
		{"nil", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := berthadm.MergeTolerations(tc.first, tc.second); !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
