package admission

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/internal/errdefs"
)

// ServiceAccountName is the plugin's upstream name.
const ServiceAccountName = "ServiceAccount"

// Service-account token volume facts, as upstream.
const (
	// DefaultServiceAccountName is used when a pod names none.
	DefaultServiceAccountName = "default"
	// TokenVolumePrefix prefixes the projected token volume's name
	// ("kube-api-access-" plus five random characters).
	TokenVolumePrefix = "kube-api-access-"
	// TokenMountPath is where every container finds token, ca.crt and namespace.
	TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// TokenExpirationSeconds is the projected token's requested lifetime.
	TokenExpirationSeconds int64 = 3607
	// RootCAConfigMap is the per-namespace configmap holding the cluster CA.
	RootCAConfigMap = "kube-root-ca.crt"
	// MirrorPodAnnotation marks a static pod's mirror in the apiserver.
	MirrorPodAnnotation = corev1.MirrorPodAnnotationKey
)

// ServiceAccountConfig configures ServiceAccount.
type ServiceAccountConfig struct {
	// ServiceAccounts is the service-account lister.
	ServiceAccounts corelisters.ServiceAccountLister
	// Client, when set, is asked for service accounts the lister does not
	// know yet (one created a moment ago).
	Client kubernetes.Interface
	// GenerateName returns the token volume's name for a prefix; nil means
	// prefix plus five random characters.
	GenerateName func(prefix string) string
	// RetryInterval separates the live lookups of a "default" service
	// account that neither the lister nor Client has yet: the controller
	// creates it just after its namespace, so, as upstream, the plugin asks
	// DefaultAccountAttempts times before refusing the pod. 0 means
	// DefaultRetryInterval.
	RetryInterval time.Duration
}

// Waiting for a namespace's "default" service account, as upstream (ten
// lookups 100-200 ms apart).
const (
	DefaultAccountAttempts = 10
	DefaultRetryInterval   = 150 * time.Millisecond
)

// ServiceAccount gives new pods a service account ("default" unless named),
// refuses pods whose service account does not exist, projects a bound token
// into every container (unless automounting is off), and copies the service
// account's imagePullSecrets into pods that have none.
type ServiceAccount struct {
	*admission.Handler
	cfg ServiceAccountConfig
}

var (
	_ admission.MutationInterface   = (*ServiceAccount)(nil)
	_ admission.ValidationInterface = (*ServiceAccount)(nil)
)

// NewServiceAccount validates cfg and returns the plugin.
func NewServiceAccount(cfg ServiceAccountConfig) (*ServiceAccount, error) {
	if cfg.ServiceAccounts == nil {
		return nil, fmt.Errorf("%s: Config.ServiceAccounts must be set: %w", ServiceAccountName, errdefs.ErrInvalidArgument)
	}
	if cfg.RetryInterval < 0 {
		return nil, fmt.Errorf("%s: Config.RetryInterval %s is negative: %w", ServiceAccountName, cfg.RetryInterval, errdefs.ErrInvalidArgument)
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.GenerateName == nil {
		cfg.GenerateName = func(prefix string) string { return prefix + utilrand.String(5) }
	}
	return &ServiceAccount{Handler: admission.NewHandler(admission.Create), cfg: cfg}, nil
}

func (s *ServiceAccount) podOf(a admission.Attributes) (*corev1.Pod, bool, error) {
	if !isResource(a, podsResource, "") || a.GetOperation() != admission.Create {
		return nil, false, nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod, got %T", a.GetObject()))
	}
	return pod, true, nil
}

// Admit defaults the service account, mounts the token volume and copies
// imagePullSecrets.
func (s *ServiceAccount) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok, err := s.podOf(a)
	if !ok || err != nil {
		return err
	}
	if _, mirror := pod.Annotations[MirrorPodAnnotation]; mirror {
		return nil // checked in Validate; mirror pods get nothing added
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	sa, err := s.get(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		s.mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	return nil
}

// Validate refuses mirror pods that reference API objects and pods whose
// service account does not exist.
func (s *ServiceAccount) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok, err := s.podOf(a)
	if !ok || err != nil {
		return err
	}
	if _, mirror := pod.Annotations[MirrorPodAnnotation]; mirror {
		return validateMirrorPod(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		return admission.NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.GetNamespace(), pod.Name))
	}
	if _, err := s.get(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName); err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	return nil
}

func validateMirrorPod(a admission.Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return admission.NewForbidden(a, fmt.Errorf("a mirror pod may not reference service accounts"))
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			return admission.NewForbidden(a, fmt.Errorf("volume %s: a mirror pod may not reference secrets", v.Name))
		case v.ConfigMap != nil:
			return admission.NewForbidden(a, fmt.Errorf("volume %s: a mirror pod may not reference configmaps", v.Name))
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				switch {
				case src.Secret != nil:
					return admission.NewForbidden(a, fmt.Errorf("volume %s: a mirror pod may not reference secrets", v.Name))
				case src.ConfigMap != nil:
					return admission.NewForbidden(a, fmt.Errorf("volume %s: a mirror pod may not reference configmaps", v.Name))
				case src.ServiceAccountToken != nil:
					return admission.NewForbidden(a, fmt.Errorf("volume %s: a mirror pod may not use ServiceAccountToken volume projections", v.Name))
				}
			}
		}
	}
	return nil
}

// get finds a service account in the lister, else asks Client (several
// times for "default", which its controller is about to create).
func (s *ServiceAccount) get(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	sa, err := s.cfg.ServiceAccounts.ServiceAccounts(ns).Get(name)
	if !apierrors.IsNotFound(err) || s.cfg.Client == nil {
		return sa, err
	}
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = DefaultAccountAttempts
	}
	for i := range attempts {
		if i > 0 {
			t := time.NewTimer(s.cfg.RetryInterval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, err
			case <-t.C:
			}
		}
		sa, err = s.cfg.Client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return sa, err
		}
	}
	return nil, err
}

// automount: the pod's automountServiceAccountToken wins, then the service
// account's; unset means true.
func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken mounts the token volume read-only at TokenMountPath in every
// init and app container that has nothing mounted there, adding the volume
// when some container needs it and the pod has none yet.
func (s *ServiceAccount) mountToken(pod *corev1.Pod) {
	volName := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, TokenVolumePrefix) {
			volName = v.Name
			break
		}
	}
	hasVolume := volName != ""
	if !hasVolume {
		volName = s.cfg.GenerateName(TokenVolumePrefix)
	}
	mount := corev1.VolumeMount{Name: volName, ReadOnly: true, MountPath: TokenMountPath}
	needed := false
	add := func(cs []corev1.Container) {
		for i := range cs {
			taken := false
			for _, m := range cs[i].VolumeMounts {
				if m.MountPath == TokenMountPath {
					taken = true
					break
				}
			}
			if !taken {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	if needed && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, TokenVolume(volName))
	}
}

// TokenVolume is upstream's projected service-account volume: a bound token
// (3607 s), the cluster CA from kube-root-ca.crt and the pod's namespace,
// files mode 0644.
func TokenVolume(name string) corev1.Volume {
	mode := int32(0o644)
	exp := TokenExpirationSeconds
	return corev1.Volume{
		Name: name,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
					Path:     "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
				}}}},
			},
			DefaultMode: &mode,
		}},
	}
}
