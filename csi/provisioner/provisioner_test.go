package provisioner

import (
	"errors"
	"reflect"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"berth/internal/errdefs"
)

const key = "topology.csi-local.berth.dev/node"

func testClaim() *corev1.PersistentVolumeClaim {
	class := "local"
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "1234", ResourceVersion: "7"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
}

func testClass() *storagev1.StorageClass {
	retain := corev1.PersistentVolumeReclaimRetain
	return &storagev1.StorageClass{
		ObjectMeta:    metav1.ObjectMeta{Name: "local"},
		Provisioner:   "csi-local.berth.dev",
		Parameters:    map[string]string{ParamFSType: "ext4", "csi.storage.k8s.io/provisioner-secret-name": "s", "tier": "gold"},
		MountOptions:  []string{"noatime"},
		ReclaimPolicy: &retain,
	}
}

func TestCreateRequest(t *testing.T) {
	topo := Requirement(testClass(), map[string]string{key: "n1"})
	req, err := CreateRequest(testClaim(), testClass(), topo)
	if err != nil {
		t.Fatal(err)
	}
	if req.Name != "pvc-1234" || req.CapacityRange.GetRequiredBytes() != 64<<20 {
		t.Errorf("name %q capacity %d, want pvc-1234 and 64Mi", req.Name, req.CapacityRange.GetRequiredBytes())
	}
	if !reflect.DeepEqual(req.Parameters, map[string]string{"tier": "gold"}) {
		t.Errorf("parameters %v: the reserved csi.storage.k8s.io/ keys must be stripped", req.Parameters)
	}
	if len(req.VolumeCapabilities) != 1 {
		t.Fatalf("capabilities %v", req.VolumeCapabilities)
	}
	c := req.VolumeCapabilities[0]
	if c.GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER || c.GetMount().GetFsType() != "ext4" ||
		!reflect.DeepEqual(c.GetMount().GetMountFlags(), []string{"noatime"}) {
		t.Errorf("capability %v", c)
	}
	if req.AccessibilityRequirements != topo {
		t.Errorf("accessibility requirements not passed through")
	}

	block := testClaim()
	m := corev1.PersistentVolumeBlock
	block.Spec.VolumeMode = &m
	block.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	req, err = CreateRequest(block, testClass(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.VolumeCapabilities[0].GetBlock() == nil || req.VolumeCapabilities[0].GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER {
		t.Errorf("block claim capability %v", req.VolumeCapabilities[0])
	}

	for name, mutate := range map[string]func(*corev1.PersistentVolumeClaim){
		"no request": func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil },
		"no modes":   func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil },
		"an odd mode": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"Sometimes"}
		},
		"a zero request": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		},
	} {
		c := testClaim()
		mutate(c)
		if _, err := CreateRequest(c, testClass(), nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestBuildVolume(t *testing.T) {
	vol := &csi.Volume{
		VolumeId: "vol-1", CapacityBytes: 128 << 20, VolumeContext: map[string]string{"kind": "ext4-file"},
		AccessibleTopology: []*csi.Topology{{Segments: map[string]string{key: "n1"}}},
	}
	pv := BuildVolume(testClaim(), testClass(), "csi-local.berth.dev", vol)
	if pv.Name != "pvc-1234" || pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != "csi-local.berth.dev" {
		t.Errorf("meta %+v", pv.ObjectMeta)
	}
	src := pv.Spec.CSI
	if src == nil || src.Driver != "csi-local.berth.dev" || src.VolumeHandle != "vol-1" || src.FSType != "ext4" || src.VolumeAttributes["kind"] != "ext4-file" {
		t.Errorf("csi source %+v", src)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "128Mi" {
		t.Errorf("capacity %s, want the created 128Mi", q.String())
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Namespace != "ns" || ref.Name != "data" || ref.UID != "1234" {
		t.Errorf("claimRef %+v", ref)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || pv.Spec.StorageClassName != "local" ||
		*pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || !reflect.DeepEqual(pv.Spec.MountOptions, []string{"noatime"}) {
		t.Errorf("spec %+v", pv.Spec)
	}
	want := &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}},
	}}}}
	if !reflect.DeepEqual(pv.Spec.NodeAffinity, want) {
		t.Errorf("node affinity %+v, want %+v", pv.Spec.NodeAffinity, want)
	}
	// The volume's affinity admits exactly the node it was made on.
	if storagehelpers.CheckNodeAffinity(pv, map[string]string{key: "n1"}) != nil || storagehelpers.CheckNodeAffinity(pv, map[string]string{key: "n2"}) == nil {
		t.Error("node affinity does not select n1 alone")
	}

	// Defaults: Delete, the requested capacity when the driver reports
	// none, no affinity without topology.
	class := testClass()
	class.ReclaimPolicy = nil
	pv = BuildVolume(testClaim(), class, "d", &csi.Volume{VolumeId: "v"})
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.NodeAffinity != nil {
		t.Errorf("defaults: %+v", pv.Spec)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("capacity %s, want the requested 64Mi", q.String())
	}
}

func TestRequirement(t *testing.T) {
	if Requirement(&storagev1.StorageClass{}, nil) != nil {
		t.Error("no selected node and no allowedTopologies: want no requirement")
	}
	sel := Requirement(testClass(), map[string]string{key: "n1"})
	if len(sel.Requisite) != 1 || sel.Requisite[0].Segments[key] != "n1" || len(sel.Preferred) != 1 {
		t.Errorf("selected node requirement %v", sel)
	}
	class := &storagev1.StorageClass{AllowedTopologies: []corev1.TopologySelectorTerm{
		{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"b", "a"}}, {Key: "rack", Values: []string{"1"}}}},
		{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"a"}}, {Key: "rack", Values: []string{"1"}}}},
	}}
	req := Requirement(class, nil)
	var got []map[string]string
	for _, topo := range req.Requisite {
		got = append(got, topo.Segments)
	}
	want := []map[string]string{{"rack": "1", "zone": "a"}, {"rack": "1", "zone": "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("allowedTopologies requisite %v, want %v (expanded, sorted, deduplicated)", got, want)
	}
	if !Matches(req, map[string]string{"zone": "b", "rack": "1", "host": "x"}) || Matches(req, map[string]string{"zone": "c", "rack": "1"}) {
		t.Error("Matches disagrees with the requisite topologies")
	}
	if !Matches(nil, map[string]string{"zone": "c"}) {
		t.Error("no requirement must match every node")
	}
}

func TestNodeSegments(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{key: "n1", "zone": "a"}}}
	seg, err := NodeSegments(node, []string{key})
	if err != nil || !reflect.DeepEqual(seg, map[string]string{key: "n1"}) {
		t.Fatalf("NodeSegments = %v, %v", seg, err)
	}
	if _, err := NodeSegments(node, []string{"rack"}); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("missing label: err = %v, want ErrUnavailable", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, cfg := range map[string]Config{
		"empty":            {},
		"negative workers": {Workers: -1},
	} {
		if err := cfg.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
	}
}
