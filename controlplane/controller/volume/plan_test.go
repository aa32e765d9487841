package volume

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

type pvOpt func(*corev1.PersistentVolume)

func pv(name, size string, opts ...pvOpt) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

func modes(m ...corev1.PersistentVolumeAccessMode) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.AccessModes = m }
}
func pvClass(c string) pvOpt { return func(v *corev1.PersistentVolume) { v.Spec.StorageClassName = c } }
func pvLabel(k, val string) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Labels[k] = val }
}
func pvPhase(p corev1.PersistentVolumePhase) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Status.Phase = p }
}
func claimRef(ns, name string, uid types.UID) pvOpt {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, UID: uid}
	}
}
func pvAnn(k string) pvOpt { return func(v *corev1.PersistentVolume) { v.Annotations[k] = "x" } }
func reclaim(p corev1.PersistentVolumeReclaimPolicy) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = p }
}
func block(v *corev1.PersistentVolume) {
	m := corev1.PersistentVolumeBlock
	v.Spec.VolumeMode = &m
}

type pvcOpt func(*corev1.PersistentVolumeClaim)

func pvc(name, size string, opts ...pvcOpt) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func class(name string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = &name }
}
func claimModes(m ...corev1.PersistentVolumeAccessMode) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = m }
}
func selector(k, v string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}
func volumeName(n string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = n }
}
func claimAnn(k, v string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Annotations[k] = v }
}
func claimBlock(c *corev1.PersistentVolumeClaim) {
	m := corev1.PersistentVolumeBlock
	c.Spec.VolumeMode = &m
}

func storageClass(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func TestFindBestMatch(t *testing.T) {
	rwo, rox, rwx := corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany
	for _, tc := range []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		delay   bool
		want    string
	}{
		{"smallest that fits", pvc("c", "2Gi"), []*corev1.PersistentVolume{pv("big", "10Gi"), pv("small", "1Gi"), pv("fit", "3Gi")}, false, "fit"},
		{"exact size fits", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("a", "2Gi"), pv("b", "1Gi")}, false, "b"},
		{"none large enough", pvc("c", "5Gi"), []*corev1.PersistentVolume{pv("a", "1Gi")}, false, ""},
		{"access modes must include the claim's", pvc("c", "1Gi", claimModes(rwx)), []*corev1.PersistentVolume{pv("rwo", "1Gi"), pv("rwx", "5Gi", modes(rwo, rwx))}, false, "rwx"},
		{"fewest access modes before smallest", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("many", "1Gi", modes(rwo, rox, rwx)), pv("one", "8Gi")}, false, "one"},
		{"class must be equal", pvc("c", "1Gi", class("fast")), []*corev1.PersistentVolume{pv("none", "1Gi"), pv("slow", "1Gi", pvClass("slow")), pv("fast", "4Gi", pvClass("fast"))}, false, "fast"},
		{"empty class matches only classless volumes", pvc("c", "1Gi", class("")), []*corev1.PersistentVolume{pv("fast", "1Gi", pvClass("fast")), pv("none", "4Gi")}, false, "none"},
		{"unset class matches classless volumes", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("fast", "1Gi", pvClass("fast"))}, false, ""},
		{"selector", pvc("c", "1Gi", selector("tier", "gold")), []*corev1.PersistentVolume{pv("plain", "1Gi"), pv("gold", "2Gi", pvLabel("tier", "gold"))}, false, "gold"},
		{"volume mode must match", pvc("c", "1Gi", claimBlock), []*corev1.PersistentVolume{pv("fs", "1Gi"), pv("blk", "2Gi", block)}, false, "blk"},
		{"filesystem claim skips block volumes", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("blk", "1Gi", block)}, false, ""},
		{"only Available volumes", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("released", "1Gi", pvPhase(corev1.VolumeReleased)), pv("avail", "2Gi")}, false, "avail"},
		{"volumes claimed by others are skipped", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("taken", "1Gi", claimRef("ns", "other", "u")), pv("free", "2Gi")}, false, "free"},
		{"pre-bound volume wins over a smaller one", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("small", "1Gi"), pv("mine", "9Gi", claimRef("ns", "c", ""))}, false, "mine"},
		{"pre-bound in another namespace is not ours", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("theirs", "1Gi", claimRef("other", "c", ""))}, false, ""},
		{"pre-bound to another UID of the name is not ours", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("old", "1Gi", claimRef("ns", "c", "old-uid"))}, false, ""},
		{"delayed binding leaves free volumes to the scheduler", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("free", "1Gi")}, true, ""},
		{"delayed binding still takes a pre-bound volume", pvc("c", "1Gi"), []*corev1.PersistentVolume{pv("mine", "1Gi", claimRef("ns", "c", ""))}, true, "mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FindBestMatch(tc.claim, tc.volumes, tc.delay)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want {
				t.Fatalf("FindBestMatch = %q, want %q", name, tc.want)
			}
		})
	}
}

func TestPlanClaim(t *testing.T) {
	wffc := storageClass("local", "csi-local.berth.dev", storagev1.VolumeBindingWaitForFirstConsumer)
	immediate := storageClass("fast", "csi.example.com", storagev1.VolumeBindingImmediate)
	bound := claimAnn(storagehelpers.AnnBindCompleted, "yes")
	byCtrl := claimAnn(storagehelpers.AnnBoundByController, "yes")
	for _, tc := range []struct {
		name       string
		state      ClaimState
		action     ClaimAction
		phase      corev1.PersistentVolumeClaimPhase
		volume     string
		reason     string
		msgHas     string
		wantErr    bool
		provisions string
	}{
		{name: "binds the best match", state: ClaimState{Claim: pvc("c", "1Gi"), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}},
			action: ClaimBind, volume: "v"},
		{name: "no volume, no class", state: ClaimState{Claim: pvc("c", "1Gi")},
			action: ClaimSetPhase, phase: corev1.ClaimPending, reason: ReasonFailedBinding, msgHas: MsgNoVolumeNoClass},
		{name: "class missing", state: ClaimState{Claim: pvc("c", "1Gi", class("gone"))},
			action: ClaimSetPhase, phase: corev1.ClaimPending, reason: ReasonProvisioningFailed, msgHas: `storageclass.storage.k8s.io "gone" not found`},
		{name: "immediate class provisions", state: ClaimState{Claim: pvc("c", "1Gi", class("fast")), Class: immediate},
			action: ClaimProvision, phase: corev1.ClaimPending, reason: ReasonExternalProvisioning, msgHas: "'csi.example.com'", provisions: "csi.example.com"},
		{name: "static volume before provisioning", state: ClaimState{Claim: pvc("c", "1Gi", class("fast")), Class: immediate, Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", pvClass("fast"))}},
			action: ClaimBind, volume: "v"},
		{name: "WaitForFirstConsumer waits for the scheduler", state: ClaimState{Claim: pvc("c", "1Gi", class("local")), Class: wffc, Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", pvClass("local"))}},
			action: ClaimSetPhase, phase: corev1.ClaimPending, reason: ReasonWaitForFirstConsumer, msgHas: MsgWaitForFirstConsumer},
		{name: "WaitForFirstConsumer provisions once a node is selected", state: ClaimState{Claim: pvc("c", "1Gi", class("local"), claimAnn(storagehelpers.AnnSelectedNode, "n1")), Class: wffc},
			action: ClaimProvision, phase: corev1.ClaimPending, provisions: "csi-local.berth.dev", reason: ReasonExternalProvisioning},
		{name: "WaitForFirstConsumer binds a volume the scheduler pre-bound", state: ClaimState{Claim: pvc("c", "1Gi", class("local")), Class: wffc, Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", pvClass("local"), claimRef("ns", "c", "uid-c"))}},
			action: ClaimBind, volume: "v"},
		{name: "named volume missing", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"))},
			action: ClaimSetPhase, phase: corev1.ClaimPending},
		{name: "named volume free and fitting", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", pvPhase(corev1.VolumeReleased))}},
			action: ClaimBind, volume: "v"},
		{name: "named volume too small", state: ClaimState{Claim: pvc("c", "2Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}},
			action: ClaimSetPhase, phase: corev1.ClaimPending, reason: ReasonVolumeMismatch, msgHas: "requested PV is too small"},
		{name: "named volume of another class", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", pvClass("x"))}},
			action: ClaimSetPhase, phase: corev1.ClaimPending, reason: ReasonVolumeMismatch, msgHas: "storageClassName does not match"},
		{name: "named volume pre-bound to this claim", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "c", ""))}},
			action: ClaimBind, volume: "v"},
		{name: "named volume bound to another claim", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v")), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "other", "u"))}},
			action: ClaimSetPhase, phase: corev1.ClaimPending, reason: ReasonFailedBinding, msgHas: "already bound to a different claim"},
		{name: "controller-bound claim whose volume is taken", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), byCtrl), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "other", "u"))}},
			action: ClaimSetPhase, phase: corev1.ClaimPending, wantErr: true},
		{name: "bound claim stays bound", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), bound), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "c", "uid-c"))}},
			action: ClaimBind, volume: "v"},
		{name: "bound claim whose volume lost its claimRef is rebound", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), bound), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}},
			action: ClaimBind, volume: "v"},
		{name: "bound claim lost its volume", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), bound)},
			action: ClaimSetPhase, phase: corev1.ClaimLost, reason: ReasonClaimLost, msgHas: "lost its PersistentVolume"},
		{name: "bound claim lost its volume name", state: ClaimState{Claim: pvc("c", "1Gi", bound)},
			action: ClaimSetPhase, phase: corev1.ClaimLost, reason: ReasonClaimLost, msgHas: "lost reference"},
		{name: "bound claim whose volume is another's", state: ClaimState{Claim: pvc("c", "1Gi", volumeName("v"), bound), Volumes: []*corev1.PersistentVolume{pv("v", "1Gi", claimRef("ns", "c2", "uid-c2"))}},
			action: ClaimSetPhase, phase: corev1.ClaimLost, reason: ReasonClaimMisbound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanClaim(tc.state)
			if p.Action != tc.action {
				t.Fatalf("action = %v, want %v (plan %+v)", p.Action, tc.action, p)
			}
			if tc.action != ClaimBind && p.Phase != tc.phase {
				t.Errorf("phase = %q, want %q", p.Phase, tc.phase)
			}
			if tc.volume != "" && (p.Volume == nil || p.Volume.Name != tc.volume) {
				t.Errorf("volume = %v, want %q", p.Volume, tc.volume)
			}
			if p.Provisioner != tc.provisions {
				t.Errorf("provisioner = %q, want %q", p.Provisioner, tc.provisions)
			}
			if (p.Err != nil) != tc.wantErr {
				t.Errorf("err = %v, want error %v", p.Err, tc.wantErr)
			}
			switch {
			case tc.reason == "" && p.Event != nil:
				t.Errorf("event %+v, want none", p.Event)
			case tc.reason != "" && (p.Event == nil || p.Event.Reason != tc.reason || !strings.Contains(p.Event.Message, tc.msgHas)):
				t.Errorf("event %+v, want reason %q with %q", p.Event, tc.reason, tc.msgHas)
			}
		})
	}
}

func TestPlanVolume(t *testing.T) {
	claim := pvc("c", "1Gi", volumeName("v"))
	other := pvc("c", "1Gi", volumeName("elsewhere"))
	unbound := pvc("c", "1Gi")
	recreated := pvc("c", "1Gi", volumeName("v"))
	recreated.UID = "new"
	provisioned := pvAnn(storagehelpers.AnnDynamicallyProvisioned)
	ctrlBound := pvAnn(storagehelpers.AnnBoundByController)
	for _, tc := range []struct {
		name   string
		volume *corev1.PersistentVolume
		claim  *corev1.PersistentVolumeClaim
		action VolumeAction
		phase  corev1.PersistentVolumePhase
		claimQ string
		reason string
	}{
		{"unclaimed is Available", pv("v", "1Gi", pvPhase(corev1.VolumePending)), nil, VolumeSetPhase, corev1.VolumeAvailable, "", ""},
		{"pre-bound is Available and syncs its claim", pv("v", "1Gi", claimRef("ns", "c", "")), nil, VolumeSetPhase, corev1.VolumeAvailable, "ns/c", ""},
		{"bound to its claim is Bound", pv("v", "1Gi", claimRef("ns", "c", "uid-c")), claim, VolumeSetPhase, corev1.VolumeBound, "", ""},
		{"claim not yet pointing back: sync the claim", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), ctrlBound), unbound, VolumeWaitClaim, "", "ns/c", ""},
		{"claim gone, Retain: Released", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound)), nil, VolumeSetPhase, corev1.VolumeReleased, "", ""},
		{"claim recreated under the name: Released", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound)), recreated, VolumeSetPhase, corev1.VolumeReleased, "", ""},
		{"Released and Retain stays", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeReleased)), nil, VolumeNothing, "", "", ""},
		{"claim gone, Delete, provisioned: Released for the provisioner", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), provisioned, reclaim(corev1.PersistentVolumeReclaimDelete), pvPhase(corev1.VolumeBound)), nil, VolumeSetPhase, corev1.VolumeReleased, "", ""},
		{"Released, Delete, provisioned: the provisioner's turn", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), provisioned, reclaim(corev1.PersistentVolumeReclaimDelete), pvPhase(corev1.VolumeReleased)), nil, VolumeNothing, "", "", ""},
		{"claim gone, Delete, not provisioned: Failed", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), reclaim(corev1.PersistentVolumeReclaimDelete), pvPhase(corev1.VolumeBound)), nil, VolumeSetPhase, corev1.VolumeFailed, "", ReasonVolumeFailedDelete},
		{"claim gone, Recycle: Failed", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), reclaim(corev1.PersistentVolumeReclaimRecycle)), nil, VolumeSetPhase, corev1.VolumeFailed, "", ReasonVolumeFailedRecycle},
		{"claim bound elsewhere, controller's binding: unbind", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), ctrlBound), other, VolumeUnbind, corev1.VolumeAvailable, "", ""},
		{"claim bound elsewhere, provisioned for it with Delete: Released", pv("v", "1Gi", claimRef("ns", "c", "uid-c"), provisioned, reclaim(corev1.PersistentVolumeReclaimDelete)), other, VolumeSetPhase, corev1.VolumeReleased, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanVolume(tc.volume, tc.claim)
			if p.Action != tc.action || p.Phase != tc.phase || p.Claim != tc.claimQ {
				t.Fatalf("plan = %+v, want action %v phase %q claim %q", p, tc.action, tc.phase, tc.claimQ)
			}
			if got := ""; p.Event != nil {
				got = p.Event.Reason
				if got != tc.reason {
					t.Errorf("event reason %q, want %q", got, tc.reason)
				}
			} else if tc.reason != "" {
				t.Errorf("no event, want %q", tc.reason)
			}
		})
	}
}
