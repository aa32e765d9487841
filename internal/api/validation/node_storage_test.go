package validation

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateRuntimeClass(t *testing.T) {
	valid := func() *nodev1.RuntimeClass {
		return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
			Overhead:   &nodev1.Overhead{PodFixed: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("1Mi")}},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"}, Tolerations: []v1.Toleration{{Key: "sandbox", Operator: v1.TolerationOpExists}}}}
	}
	for name, tc := range map[string]struct {
		mutate func(*nodev1.RuntimeClass)
		wants  []want
	}{
		"valid":              {func(*nodev1.RuntimeClass) {}, nil},
		"handler missing":    {func(rc *nodev1.RuntimeClass) { rc.Handler = "" }, []want{{field.ErrorTypeInvalid, "handler", "a lowercase RFC 1123 label"}}},
		"handler not label":  {func(rc *nodev1.RuntimeClass) { rc.Handler = "Run.C" }, []want{{field.ErrorTypeInvalid, "handler", "RFC 1123 label"}}},
		"negative overhead":  {func(rc *nodev1.RuntimeClass) { rc.Overhead.PodFixed[v1.ResourceCPU] = resource.MustParse("-1") }, []want{{field.ErrorTypeInvalid, "overhead.limits[cpu]", "must be greater than or equal to 0"}}},
		"bad selector label": {func(rc *nodev1.RuntimeClass) { rc.Scheduling.NodeSelector = map[string]string{"a b": "x"} }, []want{{field.ErrorTypeInvalid, "scheduling.nodeSelector", ""}}},
		"bad toleration": {func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpEqual, Value: "x"}}
		}, []want{{field.ErrorTypeInvalid, "scheduling.tolerations.tolerations[0].operator", "operator must be Exists when `key` is empty"}}},
		"duplicate toleration": {func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.Tolerations = append(rc.Scheduling.Tolerations, rc.Scheduling.Tolerations[0])
		}, []want{{field.ErrorTypeDuplicate, "scheduling.tolerations[1]", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			rc := valid()
			tc.mutate(rc)
			checkErrors(t, ValidateRuntimeClass(rc), tc.wants...)
		})
	}
	old := valid()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Handler = "kata"
	checkErrors(t, ValidateRuntimeClassUpdate(upd, old), want{field.ErrorTypeInvalid, "handler", "field is immutable"})
	upd = old.DeepCopy()
	upd.Overhead = nil
	checkErrors(t, ValidateRuntimeClassUpdate(upd, old))

	dep := valid()
	dep.Scheduling.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
	if w := WarningsForRuntimeClass(dep); len(w) != 1 || w[0] != `scheduling.nodeSelector: deprecated since v1.14; use "kubernetes.io/os" instead` {
		t.Errorf("warnings = %q", w)
	}
}

func TestValidateVolumeAttachment(t *testing.T) {
	pv := "pv-1"
	valid := func() *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: "e2e-test.storage.k8s.io", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	}
	empty, bad := "", "PV_1"
	code := int32(-1)
	for name, tc := range map[string]struct {
		mutate func(*storagev1.VolumeAttachment)
		wants  []want
	}{
		"valid":         {func(*storagev1.VolumeAttachment) {}, nil},
		"no attacher":   {func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "" }, []want{{field.ErrorTypeRequired, "spec.attacher", ""}, {field.ErrorTypeRequired, "spec.attacher", ""}}},
		"no source":     {func(va *storagev1.VolumeAttachment) { va.Spec.Source = storagev1.VolumeAttachmentSource{} }, []want{{field.ErrorTypeRequired, "spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"}}},
		"empty pv name": {func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = &empty }, []want{{field.ErrorTypeRequired, "spec.source.persistentVolumeName", "must specify non empty persistentVolumeName"}, {field.ErrorTypeInvalid, "spec.source.persistentVolumeName", ""}}},
		"bad pv name":   {func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = &bad }, []want{{field.ErrorTypeInvalid, "spec.source.persistentVolumeName", "RFC 1123 subdomain"}}},
		"bad node name": {func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "" }, []want{{field.ErrorTypeInvalid, "spec.nodeName", ""}}},
		"negative code": {func(va *storagev1.VolumeAttachment) { va.Status.AttachError = &storagev1.VolumeError{ErrorCode: &code} }, []want{{field.ErrorTypeInvalid, "status.attachError.errorCode", "must be between 0 and 2147483647"}}},
		"inline, not csi": {func(va *storagev1.VolumeAttachment) {
			va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: &v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}
		}, []want{{field.ErrorTypeForbidden, "spec.source.inlineVolumeSpec.capacity", inlineOnly}, {field.ErrorTypeRequired, "spec.source.inlineVolumeSpec.csi", "has to be specified in the context of inline volumes"}}},
	} {
		t.Run(name, func(t *testing.T) {
			va := valid()
			tc.mutate(va)
			checkErrors(t, ValidateVolumeAttachment(va), tc.wants...)
		})
	}
	old := valid()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Spec.NodeName = "node-2"
	checkErrors(t, ValidateVolumeAttachmentUpdate(upd, old), want{field.ErrorTypeInvalid, "spec", "field is immutable"})
	upd = old.DeepCopy()
	upd.Status.Attached = true
	checkErrors(t, ValidateVolumeAttachmentUpdate(upd, old))
}

func TestValidateCSIStorageCapacity(t *testing.T) {
	valid := func() *storagev1.CSIStorageCapacity {
		q := resource.MustParse("10Gi")
		return &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, StorageClassName: "e2e.example.com", Capacity: &q,
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"topology.kubernetes.io/zone": "a"}}}
	}
	for name, tc := range map[string]struct {
		mutate func(*storagev1.CSIStorageCapacity)
		wants  []want
	}{
		"valid":          {func(*storagev1.CSIStorageCapacity) {}, nil},
		"no class":       {func(c *storagev1.CSIStorageCapacity) { c.StorageClassName = "" }, []want{{field.ErrorTypeInvalid, "storageClassName", ""}}},
		"negative":       {func(c *storagev1.CSIStorageCapacity) { q := resource.MustParse("-1"); c.Capacity = &q }, []want{{field.ErrorTypeInvalid, "capacity", "must be greater than or equal to 0"}}},
		"bad selector":   {func(c *storagev1.CSIStorageCapacity) { c.NodeTopology.MatchLabels = map[string]string{"a b": "x"} }, []want{{field.ErrorTypeInvalid, "nodeTopology.matchLabels", ""}}},
		"no namespace":   {func(c *storagev1.CSIStorageCapacity) { c.Namespace = "" }, []want{{field.ErrorTypeRequired, "metadata.namespace", ""}}},
		"unset capacity": {func(c *storagev1.CSIStorageCapacity) { c.Capacity = nil }, nil},
	} {
		t.Run(name, func(t *testing.T) {
			c := valid()
			tc.mutate(c)
			checkErrors(t, ValidateCSIStorageCapacity(c), tc.wants...)
		})
	}
	old := valid()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.StorageClassName = "other"
	upd.NodeTopology = nil
	checkErrors(t, ValidateCSIStorageCapacityUpdate(upd, old),
		want{field.ErrorTypeInvalid, "storageClassName", "field is immutable"}, want{field.ErrorTypeInvalid, "nodeTopology", "field is immutable"})
	upd = old.DeepCopy()
	q := resource.MustParse("5Gi")
	upd.Capacity = &q
	checkErrors(t, ValidateCSIStorageCapacityUpdate(upd, old))
}

func TestValidatePodTemplate(t *testing.T) {
	tmpl := &v1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns"}, Template: v1.PodTemplateSpec{Spec: validPod().Spec}}
	checkErrors(t, ValidatePodTemplate(tmpl))
	bad := tmpl.DeepCopy()
	bad.Template.Spec.Containers = nil
	bad.Template.Labels = map[string]string{"a b": "c"}
	checkErrors(t, ValidatePodTemplate(bad), want{field.ErrorTypeRequired, "template.spec.containers", ""}, want{field.ErrorTypeInvalid, "template.metadata.labels", ""})
	tmpl.ResourceVersion = "1"
	upd := tmpl.DeepCopy()
	upd.Template.Spec.Containers[0].Image = "nginx:1"
	upd.Template.Spec.RestartPolicy = v1.RestartPolicyNever
	checkErrors(t, ValidatePodTemplateUpdate(upd, tmpl))
}
