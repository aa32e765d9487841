package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	berthadm "berth/controlplane/admission"
)

func serviceAccountPlugin(t *testing.T, sas ...any) *berthadm.ServiceAccount {
	t.Helper()
	p, err := berthadm.NewServiceAccount(berthadm.ServiceAccountConfig{
		ServiceAccounts: corelisters.NewServiceAccountLister(indexer(t, sas...)),
		GenerateName:    func(prefix string) string { return prefix + "abcde" },
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sa(ns, name string, mutate func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
	s := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func TestServiceAccountTokenVolume(t *testing.T) {
	p := serviceAccountPlugin(t, sa("ns", "default", func(s *corev1.ServiceAccount) {
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	}))
	pod := newPod("ns", "p")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName %q, want default", pod.Spec.ServiceAccountName)
	}
	mode := int32(0o644)
	exp := int64(3607)
	want := corev1.Volume{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
		DefaultMode: &mode,
	}}}
	if len(pod.Spec.Volumes) != 1 || !apiequality.Semantic.DeepEqual(pod.Spec.Volumes[0], want) {
		t.Fatalf("volumes %+v, want %+v", pod.Spec.Volumes, want)
	}
	wantMount := corev1.VolumeMount{Name: "kube-api-access-abcde", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if len(c.VolumeMounts) != 1 || !apiequality.Semantic.DeepEqual(c.VolumeMounts[0], wantMount) {
			t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
		}
	}
	if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets %v, want the service account's", pod.Spec.ImagePullSecrets)
	}
}

func TestServiceAccountCases(t *testing.T) {
	no := false
	p := serviceAccountPlugin(t,
		sa("ns", "default", nil),
		sa("ns", "quiet", func(s *corev1.ServiceAccount) { s.AutomountServiceAccountToken = &no }),
	)
	t.Run("pod opts out", func(t *testing.T) {
		pod := newPod("ns", "p")
		pod.Spec.AutomountServiceAccountToken = &no
		if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.Volumes) != 0 {
			t.Errorf("volumes %v", pod.Spec.Volumes)
		}
	})
	t.Run("service account opts out", func(t *testing.T) {
		pod := newPod("ns", "p")
		pod.Spec.ServiceAccountName = "quiet"
		if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.Volumes) != 0 {
			t.Errorf("volumes %v", pod.Spec.Volumes)
		}
	})
	t.Run("existing mount at the path is kept", func(t *testing.T) {
		pod := newPod("ns", "p")
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: berthadm.TokenMountPath}}
		pod.Spec.Volumes = []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.Volumes) != 1 || len(pod.Spec.Containers[0].VolumeMounts) != 1 {
			t.Errorf("volumes %v mounts %v", pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts)
		}
	})
	t.Run("pod's own imagePullSecrets win", func(t *testing.T) {
		pod := newPod("ns", "p")
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "own"}}
		if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "own" {
			t.Errorf("imagePullSecrets %v", pod.Spec.ImagePullSecrets)
		}
	})
	t.Run("missing service account", func(t *testing.T) {
		pod := newPod("ns", "p")
		pod.Spec.ServiceAccountName = "ghost"
		wantStatus(t, admit(context.Background(), p, podCreate(pod, alice)), 403, `error looking up service account ns/ghost: serviceaccount "ghost" not found`)
	})
	t.Run("mirror pod may not reference secrets", func(t *testing.T) {
		pod := newPod("ns", "p")
		pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		pod.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		wantStatus(t, admit(context.Background(), p, podCreate(pod, alice)), 403, "a mirror pod may not reference secrets")
	})
	t.Run("mirror pod gets no service account", func(t *testing.T) {
		pod := newPod("ns", "p")
		pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
			t.Fatal(err)
		}
		if pod.Spec.ServiceAccountName != "" || len(pod.Spec.Volumes) != 0 {
			t.Errorf("mirror pod was changed: %+v", pod.Spec)
		}
	})
}
