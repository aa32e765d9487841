package pod

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

func ptr[T any](v T) *T { return &v }

func newPod() *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}},
	}
	defaults.Pod(p)
	return p
}

func TestPrepareForCreateResetsStatus(t *testing.T) {
	s := NewStrategy(scheme.New())
	p := newPod()
	p.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "1.2.3.4"}
	s.PrepareForCreate(context.Background(), p)
	if p.Status.Phase != v1.PodPending || p.Status.PodIP != "" || p.Status.QOSClass != v1.PodQOSBestEffort || p.Generation != 1 {
		t.Fatalf("after PrepareForCreate: status %+v generation %d", p.Status, p.Generation)
	}
	if errs := s.Validate(context.Background(), p); len(errs) != 0 {
		t.Fatalf("valid pod rejected: %v", errs)
	}
	gated := newPod()
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	s.PrepareForCreate(context.Background(), gated)
	if c := gated.Status.Conditions; len(c) != 1 || c[0].Type != v1.PodScheduled || c[0].Status != v1.ConditionFalse || c[0].Reason != v1.PodReasonSchedulingGated {
		t.Fatalf("gated pod conditions = %+v", c)
	}
	if got := Summarize(gated).Status; got != "SchedulingGated" {
		t.Errorf("gated pod STATUS = %q", got)
	}
}

func TestPrepareForUpdateKeepsStatusAndBumpsGeneration(t *testing.T) {
	s := NewStrategy(scheme.New())
	old := newPod()
	old.Generation = 3
	old.Status.Phase = v1.PodRunning
	upd := old.DeepCopy()
	upd.Status.Phase = v1.PodFailed
	upd.Labels["x"] = "y"
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Status.Phase != v1.PodRunning || upd.Generation != 3 {
		t.Fatalf("metadata-only update: phase %q generation %d, want Running 3", upd.Status.Phase, upd.Generation)
	}
	upd2 := old.DeepCopy()
	upd2.Spec.Containers[0].Image = "busybox:2"
	s.PrepareForUpdate(context.Background(), upd2, old)
	if upd2.Generation != 4 {
		t.Fatalf("spec update: generation %d, want 4", upd2.Generation)
	}
}

func TestStatusStrategyKeepsSpec(t *testing.T) {
	s := Kind.StatusStrategy(scheme.New())
	old := newPod()
	old.Spec.NodeName = "n1"
	old.Status.QOSClass = v1.PodQOSBurstable
	old.OwnerReferences = []metav1.OwnerReference{{Name: "rs", UID: "u", Kind: "ReplicaSet", APIVersion: "apps/v1"}}
	upd := old.DeepCopy()
	upd.Spec.Containers[0].Image = "evil:1"
	upd.OwnerReferences = nil
	upd.Status.Phase = v1.PodRunning
	upd.Status.QOSClass = ""
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Spec.Containers[0].Image != "busybox:1" || len(upd.OwnerReferences) != 1 || upd.Status.Phase != v1.PodRunning || upd.Status.QOSClass != v1.PodQOSBurstable {
		t.Fatalf("status update did not keep spec/ownerRefs/qos or lost status: %+v", upd)
	}
}

func TestCheckGracefulDelete(t *testing.T) {
	s := NewStrategy(scheme.New())
	for name, tc := range map[string]struct {
		node  string
		phase v1.PodPhase
		grace *int64
		opt   *int64
		want  int64
	}{
		"bound uses spec grace":         {node: "n1", grace: ptr(int64(30)), want: 30},
		"request overrides":             {node: "n1", grace: ptr(int64(30)), opt: ptr(int64(5)), want: 5},
		"unscheduled is immediate":      {grace: ptr(int64(30)), want: 0},
		"succeeded is immediate":        {node: "n1", phase: v1.PodSucceeded, grace: ptr(int64(30)), want: 0},
		"failed is immediate":           {node: "n1", phase: v1.PodFailed, grace: ptr(int64(30)), want: 0},
		"negative becomes 1":            {node: "n1", opt: ptr(int64(-5)), want: 1},
		"no spec grace means immediate": {node: "n1", want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPod()
			p.Spec.NodeName = tc.node
			p.Status.Phase = tc.phase
			p.Spec.TerminationGracePeriodSeconds = tc.grace
			opts := &metav1.DeleteOptions{GracePeriodSeconds: tc.opt}
			if !s.CheckGracefulDelete(context.Background(), p, opts) {
				t.Fatal("CheckGracefulDelete = false")
			}
			if *opts.GracePeriodSeconds != tc.want {
				t.Fatalf("grace = %d, want %d", *opts.GracePeriodSeconds, tc.want)
			}
		})
	}
	if s.CheckGracefulDelete(context.Background(), newPod(), nil) {
		t.Error("CheckGracefulDelete(nil options) = true")
	}
}

func TestGetAttrsAndPredicate(t *testing.T) {
	p := newPod()
	p.Spec.NodeName = "n1"
	p.Status.Phase = v1.PodRunning
	p.Status.PodIPs = []v1.PodIP{{IP: "10.1.0.4"}}
	for _, sel := range []string{"spec.nodeName=n1", "status.phase=Running", "metadata.name=p,metadata.namespace=default", "status.podIP=10.1.0.4", "spec.restartPolicy=Always", "spec.schedulerName=default-scheduler"} {
		pred := Kind.Predicate(labels.SelectorFromSet(labels.Set{"app": "web"}), fields.ParseSelectorOrDie(sel))
		ok, err := pred.Matches(p)
		if err != nil || !ok {
			t.Errorf("selector %q: match=%v err=%v", sel, ok, err)
		}
	}
	pred := Kind.Predicate(labels.Everything(), fields.ParseSelectorOrDie("spec.nodeName=n2"))
	if ok, _ := pred.Matches(p); ok {
		t.Error("spec.nodeName=n2 matched a pod on n1")
	}
	if name, ok := pred.MatchesSingle(); ok || name != "" {
		t.Errorf("MatchesSingle = %q %v", name, ok)
	}
	if got := pred.IndexFields; len(got) != 1 || got[0] != "spec.nodeName" {
		t.Errorf("index fields %v", got)
	}
	idx := (*Indexers())["f:spec.nodeName"]
	if vals, _ := idx(p); len(vals) != 1 || vals[0] != "n1" {
		t.Errorf("indexer gave %v", vals)
	}
}

func TestQOSClass(t *testing.T) {
	res := func(lim, req v1.ResourceList) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: lim, Requests: req}
	}
	both := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}
	cpuOnly := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	for name, tc := range map[string]struct {
		rs   []v1.ResourceRequirements
		want v1.PodQOSClass
	}{
		"none":               {[]v1.ResourceRequirements{{}}, v1.PodQOSBestEffort},
		"equal limits":       {[]v1.ResourceRequirements{res(both, both)}, v1.PodQOSGuaranteed},
		"request only":       {[]v1.ResourceRequirements{res(nil, cpuOnly)}, v1.PodQOSBurstable},
		"cpu limit only":     {[]v1.ResourceRequirements{res(cpuOnly, cpuOnly)}, v1.PodQOSBurstable},
		"one of two missing": {[]v1.ResourceRequirements{res(both, both), {}}, v1.PodQOSBurstable},
	} {
		p := &v1.Pod{}
		for i, r := range tc.rs {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: string(rune('a' + i)), Resources: r})
		}
		if got := QOSClass(p); got != tc.want {
			t.Errorf("%s: QOSClass = %s, want %s", name, got, tc.want)
		}
	}
}

func TestStatusStrategySyncsPodIPs(t *testing.T) {
	s := Kind.StatusStrategy(scheme.New())
	old := newPod()
	upd := old.DeepCopy()
	upd.Status.PodIP = "10.1.0.7"
	upd.Status.HostIPs = []v1.HostIP{{IP: "192.168.1.2"}}
	s.PrepareForUpdate(context.Background(), upd, old)
	if len(upd.Status.PodIPs) != 1 || upd.Status.PodIPs[0].IP != "10.1.0.7" || upd.Status.HostIP != "192.168.1.2" {
		t.Fatalf("IPs not synced: %+v", upd.Status)
	}
}

func TestStatusStrategyKeepsObservedGenerations(t *testing.T) {
	s := Kind.StatusStrategy(scheme.New())
	old := newPod()
	old.Status.ObservedGeneration = 4
	old.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, ObservedGeneration: 3}, {Type: v1.PodScheduled, ObservedGeneration: 2}}
	upd := old.DeepCopy()
	upd.Status.ObservedGeneration = 0
	upd.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled}, {Type: v1.PodReady, ObservedGeneration: 5}, {Type: v1.ContainersReady}}
	s.PrepareForUpdate(context.Background(), upd, old)
	c := upd.Status.Conditions
	if upd.Status.ObservedGeneration != 4 || c[0].ObservedGeneration != 2 || c[1].ObservedGeneration != 5 || c[2].ObservedGeneration != 0 {
		t.Fatalf("observed generations: status %d conditions %+v", upd.Status.ObservedGeneration, c)
	}
}

func TestWarningsOnCreate(t *testing.T) {
	s := NewStrategy(scheme.New())
	p := newPod()
	if w := s.WarningsOnCreate(context.Background(), p); len(w) != 0 {
		t.Fatalf("warnings for a plain pod: %v", w)
	}
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1))
	if w := s.WarningsOnCreate(context.Background(), p); len(w) != 1 {
		t.Fatalf("negative grace period: warnings %v", w)
	}
	if w := s.WarningsOnUpdate(context.Background(), p, newPod()); len(w) != 0 {
		t.Fatalf("pod updates warn: %v", w)
	}
}
