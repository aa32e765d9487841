package statefulset

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

func validSet() *appsv1.StatefulSet {
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "nginx",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
		},
	}
	defaults.StatefulSet(ss)
	return ss
}

func TestDefaults(t *testing.T) {
	ss := validSet()
	s := ss.Spec
	if s.PodManagementPolicy != appsv1.OrderedReadyPodManagement || s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		*s.UpdateStrategy.RollingUpdate.Partition != 0 || *s.Replicas != 1 || *s.RevisionHistoryLimit != 10 ||
		s.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		s.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Fatalf("defaults: %+v", s)
	}
}

func TestValidateFieldPathsAndMessages(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		want   string
	}{
		{"valid: claim template volumes count as volumes", func(*appsv1.StatefulSet) {}, ""},
		{"bad name", func(ss *appsv1.StatefulSet) { ss.Name = "Web.1" }, "metadata.name: Invalid value"},
		{"empty selector", func(ss *appsv1.StatefulSet) { ss.Spec.Selector = &metav1.LabelSelector{} }, "spec.selector: Invalid value: {}: empty selector is invalid for statefulset"},
		{"selector not matching", func(ss *appsv1.StatefulSet) { ss.Spec.Selector.MatchLabels["app"] = "x" }, "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"},
		{"policy", func(ss *appsv1.StatefulSet) { ss.Spec.PodManagementPolicy = "Sometimes" }, "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'"},
		{"strategy", func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.Type = "Sometimes" }, "must be 'RollingUpdate' or 'OnDelete'"},
		{"OnDelete with rollingUpdate", func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType }, "spec.updateStrategy.rollingUpdate: Invalid value: {\"partition\":0}: only allowed for updateStrategy 'RollingUpdate'"},
		{"negative partition", func(ss *appsv1.StatefulSet) { n := int32(-1); ss.Spec.UpdateStrategy.RollingUpdate.Partition = &n }, "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"},
		{"zero maxUnavailable", func(ss *appsv1.StatefulSet) {
			z := intstr.FromInt32(0)
			ss.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &z
		}, "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0"},
		{"retention", func(ss *appsv1.StatefulSet) { ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep" }, `spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: "Keep"`},
		{"service name", func(ss *appsv1.StatefulSet) { ss.Spec.ServiceName = "Bad_Name" }, `spec.serviceName: Invalid value: "Bad_Name"`},
		{"restart policy", func(ss *appsv1.StatefulSet) { ss.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, `spec.template.spec.restartPolicy: Unsupported value: "Never"`},
		{"claim without storage", func(ss *appsv1.StatefulSet) { ss.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = nil }, "spec.volumeClaimTemplates[0].spec.resources[storage]: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := validSet()
			tc.mutate(ss)
			errs := s.Validate(context.Background(), ss)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestUpdateRulesAndTable(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	old := validSet()
	s.PrepareForCreate(context.Background(), old)
	upd := old.DeepCopy()
	n := int32(3)
	upd.Spec.Replicas = &n
	upd.Spec.Template.Spec.Containers[0].Image = "img:v2"
	s.PrepareForUpdate(context.Background(), upd, old)
	if errs := s.ValidateUpdate(context.Background(), upd, old); len(errs) != 0 || upd.Generation != 2 {
		t.Fatalf("replicas and template may change: %v (generation %d)", errs, upd.Generation)
	}
	bad := upd.DeepCopy()
	bad.Spec.ServiceName = "other"
	if errs := s.ValidateUpdate(context.Background(), bad, upd); !strings.Contains(errs.ToAggregate().Error(), "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden") {
		t.Fatalf("serviceName change: %v", errs)
	}
	st := Kind.StatusStrategy(scheme.New())
	withStatus := upd.DeepCopy()
	withStatus.Status = appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 3}
	if errs := st.ValidateUpdate(context.Background(), withStatus, upd); !strings.Contains(errs.ToAggregate().Error(), "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas") {
		t.Fatalf("status: %v", errs)
	}
	upd.Status.ReadyReplicas = 2
	out, err := Kind.Table.ConvertToTable(context.Background(), upd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := out.Rows[0].Cells; c[0] != "web" || c[1] != "2/3" || c[3] != "c" || c[4] != "img:v2" {
		t.Fatalf("cells %v", c)
	}
}
