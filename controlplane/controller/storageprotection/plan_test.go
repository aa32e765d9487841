package storageprotection

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var deleted = metav1.Now()

type claimOpt func(*corev1.PersistentVolumeClaim)

func claim(name string, opts ...claimOpt) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Finalizers: []string{PVCFinalizer}}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func claimDeleting(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = &deleted }
func claimNoFinalizer(c *corev1.PersistentVolumeClaim) {
	c.Finalizers = nil
}
func ownedBy(pod *corev1.Pod) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		yes := true
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &yes}}
	}
}

type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func usesClaim(name string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
}

func ephemeralVolume(volume string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}})
	}
}

func unscheduled(p *corev1.Pod)    { p.Spec.NodeName = "" }
func inNamespace(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}
func forceDeleted(p *corev1.Pod) {
	zero := int64(0)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleted, &zero
}

func TestPlanClaim(t *testing.T) {
	eph := pod("web", ephemeralVolume("scratch"))
	for _, tc := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		pods  []*corev1.Pod
		want  Action
	}{
		{"live claim with the finalizer", claim("c"), []*corev1.Pod{pod("p", usesClaim("c"))}, Nothing},
		{"live claim without it gets it", claim("c", claimNoFinalizer), nil, AddFinalizer},
		{"deleted claim someone else finalizes", claim("c", claimDeleting, claimNoFinalizer), nil, Nothing},
		{"deleted, no pods", claim("c", claimDeleting), nil, RemoveFinalizer},
		{"deleted, a running pod uses it", claim("c", claimDeleting), []*corev1.Pod{pod("p", usesClaim("c"))}, Nothing},
		{"deleted, a pending scheduled pod uses it", claim("c", claimDeleting), []*corev1.Pod{pod("p", usesClaim("c"), phase(corev1.PodPending))}, Nothing},
		{"deleted, a succeeded pod still names it", claim("c", claimDeleting), []*corev1.Pod{pod("p", usesClaim("c"), phase(corev1.PodSucceeded))}, Nothing},
		{"deleted, only an unscheduled pod uses it", claim("c", claimDeleting), []*corev1.Pod{pod("p", usesClaim("c"), unscheduled)}, RemoveFinalizer},
		{"deleted, pods use other claims", claim("c", claimDeleting), []*corev1.Pod{pod("p", usesClaim("other"))}, RemoveFinalizer},
		{"deleted, a same-named claim in another namespace is used", claim("c", claimDeleting), []*corev1.Pod{pod("p", usesClaim("c"), inNamespace("other"))}, RemoveFinalizer},
		{"deleted, the pod's ephemeral claim", claim("web-scratch", claimDeleting, ownedBy(eph)), []*corev1.Pod{eph}, Nothing},
		{"deleted, an ephemeral claim name the pod does not own", claim("web-scratch", claimDeleting), []*corev1.Pod{eph}, RemoveFinalizer},
		{"deleted, ephemeral claim of a shut down pod", claim("web-scratch", claimDeleting, ownedBy(eph)), []*corev1.Pod{pod("web", ephemeralVolume("scratch"), forceDeleted)}, RemoveFinalizer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlanClaim(tc.claim, tc.pods); got != tc.want {
				t.Fatalf("PlanClaim = %s, want %s", got, tc.want)
			}
		})
	}
}

// testVolume is a volume "v" in phase ph with finalizers, being deleted
// when deleting is set.
func testVolume(ph corev1.PersistentVolumePhase, deleting bool, finalizers ...string) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: finalizers}, Status: corev1.PersistentVolumeStatus{Phase: ph}}
	if deleting {
		v.DeletionTimestamp = &deleted
	}
	return v
}

func TestPlanVolume(t *testing.T) {
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		want Action
	}{
		{"live and protected", testVolume(corev1.VolumeBound, false, PVFinalizer), Nothing},
		{"live without the finalizer", testVolume(corev1.VolumeAvailable, false), AddFinalizer},
		{"deleted while bound", testVolume(corev1.VolumeBound, true, PVFinalizer), Nothing},
		{"deleted once released", testVolume(corev1.VolumeReleased, true, PVFinalizer), RemoveFinalizer},
		{"deleted while available", testVolume(corev1.VolumeAvailable, true, PVFinalizer), RemoveFinalizer},
		{"deleted after failing", testVolume(corev1.VolumeFailed, true, "other", PVFinalizer), RemoveFinalizer},
		{"deleted before the binder saw it", testVolume("", true, PVFinalizer), RemoveFinalizer},
		{"deleted, finalizer already gone", testVolume(corev1.VolumeReleased, true, "other"), Nothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlanVolume(tc.pv); got != tc.want {
				t.Fatalf("PlanVolume = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClaimKeys(t *testing.T) {
	p := pod("web", usesClaim("data"), ephemeralVolume("scratch"))
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	if got, want := claimKeys(p), []string{"ns/data", "ns/web-scratch"}; !slices.Equal(got, want) {
		t.Fatalf("claimKeys = %v, want %v", got, want)
	}
}

func TestMayReleaseClaims(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		deleted bool
		want    bool
	}{
		{"running pod", pod("p"), false, false},
		{"deleted pod", pod("p"), true, true},
		{"failed pod", pod("p", phase(corev1.PodFailed)), false, true},
		{"unscheduled pod", pod("p", unscheduled), false, true},
	} {
		if got := mayReleaseClaims(tc.pod, tc.deleted); got != tc.want {
			t.Errorf("%s: mayReleaseClaims = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFinalizerEdits(t *testing.T) {
	in := []string{"a", PVCFinalizer, "b"}
	if got := withoutFinalizer(in, PVCFinalizer); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("withoutFinalizer = %v", got)
	}
	if !slices.Equal(in, []string{"a", PVCFinalizer, "b"}) {
		t.Errorf("withoutFinalizer changed its input: %v", in)
	}
	if got := withFinalizer([]string{"a"}, PVFinalizer); !slices.Equal(got, []string{"a", PVFinalizer}) {
		t.Errorf("withFinalizer = %v", got)
	}
}
