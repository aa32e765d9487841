package apiserver_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPriorityClasses: scheduling.k8s.io/v1 priorityclasses in discovery,
// the system classes present from the start, `kubectl create
// priorityclass` and `kubectl get pc` (NAME VALUE GLOBAL-DEFAULT AGE
// PREEMPTIONPOLICY), upstream's validation (reserved names, the user
// maximum, immutable value) and one global default only.
func TestPriorityClasses(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	res, err := cs.Discovery().ServerResourcesForGroupVersion("scheduling.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.APIResources) != 1 || res.APIResources[0].Name != "priorityclasses" || res.APIResources[0].Namespaced ||
		strings.Join(res.APIResources[0].ShortNames, ",") != "pc" {
		t.Fatalf("scheduling.k8s.io/v1 resources: %+v", res.APIResources)
	}
	pcs := cs.SchedulingV1().PriorityClasses()
	for name, value := range map[string]int32{"system-cluster-critical": 2000000000, "system-node-critical": 2000001000} {
		pc, err := pcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("system class %s: %v", name, err)
		}
		if pc.Value != value || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
			t.Errorf("%s: value %d policy %v, want %d PreemptLowerPriority", name, pc.Value, pc.PreemptionPolicy, value)
		}
	}

	shared.mustKubectl(t, "1.32", "", "create", "priorityclass", "pc-it-high", "--value=1000", "--preemption-policy=Never", "--description=high")
	t.Cleanup(func() { _ = pcs.Delete(context.Background(), "pc-it-high", metav1.DeleteOptions{}) })
	out := shared.mustKubectl(t, "1.32", "", "get", "pc", "pc-it-high")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY" {
		t.Fatalf("kubectl get pc:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) != 5 || f[0] != "pc-it-high" || f[1] != "1000" || f[2] != "false" || f[4] != "Never" {
		t.Errorf("kubectl get pc row: %q", lines[1])
	}

	_, errOut, err := shared.kubectl(t, "1.32", "", "create", "priorityclass", "system-mine", "--value=1")
	if err == nil || !strings.Contains(errOut, "priority class names with 'system-' prefix are reserved for system use only") {
		t.Errorf("system- name: err %v stderr %s", err, errOut)
	}
	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "pc-it-huge"}, Value: 1000000001}, metav1.CreateOptions{})
	wantInvalid(t, err, "value", "maximum allowed value of a user defined priority is 1000000000")

	high, err := pcs.Get(ctx, "pc-it-high", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	high.Value = 5
	_, err = pcs.Update(ctx, high, metav1.UpdateOptions{})
	wantInvalid(t, err, "value", "may not be changed in an update.")

	for _, n := range []string{"pc-it-default", "pc-it-default2"} {
		_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: n}, Value: 7, GlobalDefault: true}, metav1.CreateOptions{})
		if n == "pc-it-default" {
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pcs.Delete(context.Background(), "pc-it-default", metav1.DeleteOptions{}) })
			continue
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PriorityClass pc-it-default is already marked as default. Only one default can exist") {
			t.Errorf("second global default: %v", err)
		}
	}
}

// TestPriorityAdmission: a pod's priorityClassName is resolved to its
// priority and preemption policy, a pod without one gets the global
// default's, an unknown class and a priority without its class are
// refused with upstream's messages.
func TestPriorityAdmission(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "adm-priority"
	admissionNamespace(t, cs, ns, nil)
	never := corev1.PreemptNever
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "pc-adm-high"}, Value: 100000, PreemptionPolicy: &never}
	if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
	})
	pods := cs.CoreV1().Pods(ns)

	p := plainPod("high")
	p.Spec.PriorityClassName = pc.Name
	got, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 100000 || got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != never {
		t.Errorf("pod priority %v policy %v, want 100000 Never", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}

	p = plainPod("critical")
	p.Spec.PriorityClassName = "system-node-critical"
	if got, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil || got.Spec.Priority == nil || *got.Spec.Priority != 2000001000 {
		t.Errorf("system-node-critical pod: %v %v", got.Spec.Priority, err)
	}

	if got, err := pods.Create(ctx, plainPod("none"), metav1.CreateOptions{}); err != nil || got.Spec.Priority == nil || *got.Spec.Priority != 0 ||
		got.Spec.PriorityClassName != "" {
		t.Errorf("pod without a class: priority %v class %q, %v", got.Spec.Priority, got.Spec.PriorityClassName, err)
	}

	p = plainPod("unknown")
	p.Spec.PriorityClassName = "pc-adm-nonexistent"
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no PriorityClass with name pc-adm-nonexistent was found") {
		t.Errorf("unknown class: %v", err)
	}

	p = plainPod("bare-priority")
	prio := int32(50)
	p.Spec.Priority = &prio
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "the integer value of priority (50) must not be provided in pod spec") {
		t.Errorf("priority without its class: %v", err)
	}

	dflt := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "pc-adm-default"}, Value: 42, GlobalDefault: true}
	if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, dflt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), dflt.Name, metav1.DeleteOptions{})
	})
	// The admission informer may see the new default a moment later.
	poll(t, "the global default applied", func() bool {
		got, err := pods.Create(ctx, plainPod("defaulted"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && got.Spec.PriorityClassName == dflt.Name && got.Spec.Priority != nil && *got.Spec.Priority == 42
	})
}
