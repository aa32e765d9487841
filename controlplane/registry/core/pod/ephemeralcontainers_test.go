package pod

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

func TestEphemeralContainersStrategyChangesOnlyEphemeralContainers(t *testing.T) {
	s := NewEphemeralContainersStrategy(scheme.New())
	old := newPod()
	old.ResourceVersion = "5"
	old.Generation = 1
	old.Status.Phase = v1.PodRunning
	upd := old.DeepCopy()
	upd.Labels["sneaky"] = "yes"
	upd.Spec.Containers[0].Image = "busybox:2"
	upd.Status.Phase = v1.PodFailed
	upd.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1", TTY: true}}}
	defaults.Pod(upd)
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Generation != 2 {
		t.Errorf("generation = %d, want 2 (spec changed)", upd.Generation)
	}
	if upd.Labels["sneaky"] != "" || upd.Spec.Containers[0].Image != "busybox:1" || upd.Status.Phase != v1.PodRunning {
		t.Errorf("fields other than ephemeral containers changed: labels %v image %q phase %q", upd.Labels, upd.Spec.Containers[0].Image, upd.Status.Phase)
	}
	if len(upd.Spec.EphemeralContainers) != 1 || upd.Spec.EphemeralContainers[0].TerminationMessagePolicy != v1.TerminationMessageReadFile {
		t.Fatalf("ephemeral containers = %+v", upd.Spec.EphemeralContainers)
	}
	if errs := s.ValidateUpdate(context.Background(), upd, old); len(errs) != 0 {
		t.Fatalf("adding a debugger refused: %v", errs)
	}

	// Removing it again is refused with upstream's message.
	again := upd.DeepCopy()
	again.Spec.EphemeralContainers = nil
	s.PrepareForUpdate(context.Background(), again, upd)
	errs := s.ValidateUpdate(context.Background(), again, upd)
	if len(errs) != 1 || errs[0].Field != "spec.ephemeralContainers" || errs[0].Detail != "existing ephemeral containers \"debugger\" may not be removed\n" {
		t.Fatalf("removal: %v", errs)
	}
	if again.Generation != 3 {
		t.Errorf("generation after removal attempt = %d, want 3", again.Generation)
	}
}

func TestEphemeralContainersResetFilterKeepsOnlyEphemeralContainers(t *testing.T) {
	f := EphemeralContainersResetFilter()["v1"]
	if f == nil {
		t.Fatal("no v1 filter")
	}
	ec := fieldpath.MakePathOrDie("spec", "ephemeralContainers")
	set := fieldpath.NewSet(ec, fieldpath.MakePathOrDie("spec", "containers"), fieldpath.MakePathOrDie("metadata", "labels"))
	got := f.Filter(set)
	if !got.Equals(fieldpath.NewSet(ec)) {
		t.Fatalf("filtered = %v, want only spec.ephemeralContainers", got)
	}
}
