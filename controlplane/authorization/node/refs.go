package node

import (
	corev1 "k8s.io/api/core/v1"
)

// podRefs is what one pod lets its node read: the objects it names.
type podRefs struct {
	secrets, configMaps, claims map[string]bool
	serviceAccount              string
}

// refsOf collects every secret, configmap, PVC and service account the pod
// refers to: volumes (including projected sources, the secret references of
// volume plugins, and generic ephemeral volumes' claims), env and envFrom of
// every container kind, imagePullSecrets and serviceAccountName.
func refsOf(pod *corev1.Pod) podRefs {
	r := podRefs{secrets: map[string]bool{}, configMaps: map[string]bool{}, claims: map[string]bool{}}
	addSecret := func(ref *corev1.LocalObjectReference) {
		if ref != nil && ref.Name != "" {
			r.secrets[ref.Name] = true
		}
	}
	addSecretName := func(name string) {
		if name != "" {
			r.secrets[name] = true
		}
	}
	spec := &pod.Spec
	for i := range spec.ImagePullSecrets {
		addSecret(&spec.ImagePullSecrets[i])
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		switch {
		case v.Secret != nil:
			addSecretName(v.Secret.SecretName)
		case v.ConfigMap != nil:
			if v.ConfigMap.Name != "" {
				r.configMaps[v.ConfigMap.Name] = true
			}
		case v.PersistentVolumeClaim != nil:
			if v.PersistentVolumeClaim.ClaimName != "" {
				r.claims[v.PersistentVolumeClaim.ClaimName] = true
			}
		case v.Ephemeral != nil:
			// A generic ephemeral volume's claim is named <pod>-<volume>.
			r.claims[pod.Name+"-"+v.Name] = true
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					addSecretName(src.Secret.Name)
				}
				if src.ConfigMap != nil && src.ConfigMap.Name != "" {
					r.configMaps[src.ConfigMap.Name] = true
				}
			}
		case v.CSI != nil:
			addSecret(v.CSI.NodePublishSecretRef)
		case v.CephFS != nil:
			addSecret(v.CephFS.SecretRef)
		case v.Cinder != nil:
			addSecret(v.Cinder.SecretRef)
		case v.FlexVolume != nil:
			addSecret(v.FlexVolume.SecretRef)
		case v.ISCSI != nil:
			addSecret(v.ISCSI.SecretRef)
		case v.RBD != nil:
			addSecret(v.RBD.SecretRef)
		case v.ScaleIO != nil:
			addSecret(v.ScaleIO.SecretRef)
		case v.StorageOS != nil:
			addSecret(v.StorageOS.SecretRef)
		case v.AzureFile != nil:
			addSecretName(v.AzureFile.SecretName)
		}
	}
	visitEnv := func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				addSecretName(e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil && e.ConfigMapRef.Name != "" {
				r.configMaps[e.ConfigMapRef.Name] = true
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				addSecretName(e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name != "" {
				r.configMaps[e.ValueFrom.ConfigMapKeyRef.Name] = true
			}
		}
	}
	for i := range spec.InitContainers {
		visitEnv(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		visitEnv(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		visitEnv(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom)
	}
	r.serviceAccount = spec.ServiceAccountName
	if r.serviceAccount == "" {
		r.serviceAccount = "default"
	}
	return r
}

// pvSecrets lists the secrets (namespace/name) a PersistentVolume's source
// refers to; a node may read them when it may read the PV.
func pvSecrets(pv *corev1.PersistentVolume) []string {
	var out []string
	add := func(ref *corev1.SecretReference) {
		if ref != nil && ref.Name != "" {
			out = append(out, ref.Namespace+"/"+ref.Name)
		}
	}
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		add(s.CSI.NodePublishSecretRef)
		add(s.CSI.NodeStageSecretRef)
		add(s.CSI.NodeExpandSecretRef)
		add(s.CSI.ControllerPublishSecretRef)
	case s.CephFS != nil:
		add(s.CephFS.SecretRef)
	case s.Cinder != nil:
		add(s.Cinder.SecretRef)
	case s.FlexVolume != nil:
		add(s.FlexVolume.SecretRef)
	case s.ISCSI != nil:
		add(s.ISCSI.SecretRef)
	case s.RBD != nil:
		add(s.RBD.SecretRef)
	case s.ScaleIO != nil:
		add(s.ScaleIO.SecretRef)
	case s.StorageOS != nil:
		if s.StorageOS.SecretRef != nil && s.StorageOS.SecretRef.Name != "" {
			out = append(out, s.StorageOS.SecretRef.Namespace+"/"+s.StorageOS.SecretRef.Name)
		}
	case s.AzureFile != nil && s.AzureFile.SecretName != "":
		ns := "default"
		if s.AzureFile.SecretNamespace != nil {
			ns = *s.AzureFile.SecretNamespace
		}
		out = append(out, ns+"/"+s.AzureFile.SecretName)
	}
	return out
}
