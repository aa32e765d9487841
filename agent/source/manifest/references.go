package manifest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// apiReference names what a static pod references in the API, as the
// kubelet's check of static pods (podutil.HasAPIObjectReference, the
// PreventStaticPodAPIReferences behaviour on by default since 1.34):
// "serviceaccounts", "secrets", "configmaps", "resourceclaims" or a volume
// kind such as "persistentvolumeclaims"; "" when it references nothing. A
// volume of no known type is an error.
func apiReference(pod *v1.Pod) (string, error) {
	spec := &pod.Spec
	if spec.ServiceAccountName != "" {
		return "serviceaccounts", nil
	}
	var envSecret, envConfigMap bool
	visit := func(c *v1.Container) {
		for _, ef := range c.EnvFrom {
			envSecret = envSecret || ef.SecretRef != nil
			envConfigMap = envConfigMap || ef.ConfigMapRef != nil
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				envSecret = envSecret || e.ValueFrom.SecretKeyRef != nil
				envConfigMap = envConfigMap || e.ValueFrom.ConfigMapKeyRef != nil
			}
		}
	}
	for i := range spec.InitContainers {
		visit(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		visit((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	if envSecret || len(spec.ImagePullSecrets) > 0 || volumesUse(spec.Volumes, volumeSecret) {
		return "secrets", nil
	}
	if envConfigMap || volumesUse(spec.Volumes, volumeConfigMap) {
		return "configmaps", nil
	}
	if len(spec.ResourceClaims) > 0 {
		return "resourceclaims", nil
	}
	for _, v := range spec.Volumes {
		switch {
		case v.AWSElasticBlockStore != nil, v.AzureDisk != nil, v.CephFS != nil, v.Cinder != nil,
			v.DownwardAPI != nil, v.EmptyDir != nil, v.FC != nil, v.FlexVolume != nil, v.Flocker != nil, v.GCEPersistentDisk != nil,
			v.GitRepo != nil, v.HostPath != nil, v.Image != nil, v.ISCSI != nil, v.NFS != nil, v.PhotonPersistentDisk != nil,
			v.PortworxVolume != nil, v.Quobyte != nil, v.RBD != nil, v.ScaleIO != nil, v.StorageOS != nil, v.VsphereVolume != nil:
		case v.ConfigMap != nil:
			return "configmaps (via configmap volumes)", nil
		case v.Secret != nil:
			return "secrets (via secret volumes)", nil
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)", nil
		case v.Glusterfs != nil:
			return "endpoints (via glusterFS volumes)", nil
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims", nil
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)", nil
		case v.AzureFile != nil:
			return "secrets (via azureFile volumes)", nil
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)", nil
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles", nil
				case s.PodCertificate != nil:
					return "podcertificates", nil
				case s.DownwardAPI != nil, s.ConfigMap != nil, s.Secret != nil:
					// DownwardAPI is allowed; the others were found above.
				default:
					return "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		default:
			return "", fmt.Errorf("unknown volume type for volume  %q", v.Name)
		}
	}
	return "", nil
}

// volumeSecret reports a volume naming a Secret.
func volumeSecret(v *v1.Volume) bool {
	switch {
	case v.Secret != nil, v.AzureFile != nil,
		v.CephFS != nil && v.CephFS.SecretRef != nil, v.Cinder != nil && v.Cinder.SecretRef != nil,
		v.FlexVolume != nil && v.FlexVolume.SecretRef != nil, v.RBD != nil && v.RBD.SecretRef != nil,
		v.ScaleIO != nil && v.ScaleIO.SecretRef != nil, v.ISCSI != nil && v.ISCSI.SecretRef != nil,
		v.StorageOS != nil && v.StorageOS.SecretRef != nil, v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
		return true
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if s.Secret != nil {
				return true
			}
		}
	}
	return false
}

// volumeConfigMap reports a volume naming a ConfigMap.
func volumeConfigMap(v *v1.Volume) bool {
	if v.ConfigMap != nil {
		return true
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				return true
			}
		}
	}
	return false
}

func volumesUse(vols []v1.Volume, uses func(*v1.Volume) bool) bool {
	for i := range vols {
		if uses(&vols[i]) {
			return true
		}
	}
	return false
}
