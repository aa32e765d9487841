package validation

import (
	"math"
	"path"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const moreThanOneVolumeType = "may not specify more than 1 volume type"

var supportedHostPathTypes = sets.New(string(v1.HostPathUnset), string(v1.HostPathDirectoryOrCreate), string(v1.HostPathDirectory),
	string(v1.HostPathFileOrCreate), string(v1.HostPathFile), string(v1.HostPathSocket), string(v1.HostPathCharDev), string(v1.HostPathBlockDev))

// validateVolumes validates the pod's volumes (names valid DNS-1123 labels
// and unique, exactly one source each) and returns the valid ones by name,
// for the mounts to be checked against.
func validateVolumes(volumes []v1.Volume, fldPath *field.Path) (map[string]v1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	vols := map[string]v1.VolumeSource{}
	for i, vol := range volumes {
		p := fldPath.Index(i)
		namePath := p.Child("name")
		el := validateVolumeSource(&vol.VolumeSource, p)
		if vol.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, validateDNS1123Label(vol.Name, namePath)...)
		}
		if _, dup := vols[vol.Name]; dup {
			el = append(el, field.Duplicate(namePath, vol.Name))
		}
		if len(el) == 0 {
			vols[vol.Name] = vol.VolumeSource
		} else {
			errs = append(errs, el...)
		}
	}
	return vols, errs
}

// validateVolumeSource: exactly one source, and that source's own rules.
func validateVolumeSource(src *v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(name string, set bool, validate func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), moreThanOneVolumeType))
			return
		}
		n++
		if validate != nil {
			errs = append(errs, validate(fldPath.Child(name))...)
		}
	}
	one("emptyDir", src.EmptyDir != nil, func(p *field.Path) field.ErrorList {
		if src.EmptyDir.SizeLimit != nil && src.EmptyDir.SizeLimit.Sign() < 0 {
			return field.ErrorList{field.Forbidden(p.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity")}
		}
		return nil
	})
	one("hostPath", src.HostPath != nil, func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if src.HostPath.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
			return errs
		}
		errs = append(errs, validatePathNoBacksteps(src.HostPath.Path, p.Child("path"))...)
		if t := src.HostPath.Type; t != nil && !supportedHostPathTypes.Has(string(*t)) {
			errs = append(errs, field.NotSupported(p.Child("type"), *t, sets.List(supportedHostPathTypes)))
		}
		return errs
	})
	one("gitRepo", src.GitRepo != nil, func(p *field.Path) field.ErrorList {
		if src.GitRepo.Repository == "" {
			return field.ErrorList{field.Required(p.Child("repository"), "")}
		}
		return nil
	})
	one("gcePersistentDisk", src.GCEPersistentDisk != nil, nil)
	one("awsElasticBlockStore", src.AWSElasticBlockStore != nil, nil)
	one("secret", src.Secret != nil, func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if src.Secret.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secretName"), ""))
		}
		errs = append(errs, validateFileMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
		return append(errs, validateKeyToPaths(src.Secret.Items, p.Child("items"))...)
	})
	one("nfs", src.NFS != nil, func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if src.NFS.Server == "" {
			errs = append(errs, field.Required(p.Child("server"), ""))
		}
		if src.NFS.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
		return errs
	})
	one("iscsi", src.ISCSI != nil, nil)
	one("glusterfs", src.Glusterfs != nil, nil)
	one("persistentVolumeClaim", src.PersistentVolumeClaim != nil, func(p *field.Path) field.ErrorList {
		if src.PersistentVolumeClaim.ClaimName == "" {
			return field.ErrorList{field.Required(p.Child("claimName"), "")}
		}
		return nil
	})
	one("rbd", src.RBD != nil, nil)
	one("flexVolume", src.FlexVolume != nil, nil)
	one("cinder", src.Cinder != nil, nil)
	one("cephfs", src.CephFS != nil, nil)
	one("flocker", src.Flocker != nil, nil)
	one("downwardAPI", src.DownwardAPI != nil, func(p *field.Path) field.ErrorList {
		errs := validateFileMode(src.DownwardAPI.DefaultMode, p.Child("defaultMode"))
		return append(errs, validateDownwardAPIFiles(src.DownwardAPI.Items, p.Child("items"))...)
	})
	one("fc", src.FC != nil, nil)
	one("azureFile", src.AzureFile != nil, nil)
	one("configMap", src.ConfigMap != nil, func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if src.ConfigMap.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		errs = append(errs, validateFileMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		return append(errs, validateKeyToPaths(src.ConfigMap.Items, p.Child("items"))...)
	})
	one("vsphereVolume", src.VsphereVolume != nil, nil)
	one("quobyte", src.Quobyte != nil, nil)
	one("azureDisk", src.AzureDisk != nil, nil)
	one("photonPersistentDisk", src.PhotonPersistentDisk != nil, nil)
	one("projected", src.Projected != nil, func(p *field.Path) field.ErrorList {
		return validateProjected(src.Projected, p)
	})
	one("portworxVolume", src.PortworxVolume != nil, nil)
	one("scaleIO", src.ScaleIO != nil, nil)
	one("storageos", src.StorageOS != nil, nil)
	one("csi", src.CSI != nil, func(p *field.Path) field.ErrorList {
		if src.CSI.Driver == "" {
			return field.ErrorList{field.Required(p.Child("driver"), "")}
		}
		return validateDNS1123Subdomain(src.CSI.Driver, p.Child("driver"))
	})
	one("ephemeral", src.Ephemeral != nil, func(p *field.Path) field.ErrorList {
		if src.Ephemeral.VolumeClaimTemplate == nil {
			return field.ErrorList{field.Required(p.Child("volumeClaimTemplate"), "")}
		}
		return nil
	})
	one("image", src.Image != nil, func(p *field.Path) field.ErrorList {
		if src.Image.Reference == "" {
			return field.ErrorList{field.Required(p.Child("reference"), "")}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a volume type"))
	}
	return errs
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeyToPaths(items []v1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, kp := range items {
		p := fldPath.Index(i)
		if kp.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		if kp.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(kp.Path, p.Child("path"))...)
		errs = append(errs, validateFileMode(kp.Mode, p.Child("mode"))...)
	}
	return errs
}

func validateDownwardAPIFiles(items []v1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range items {
		p := fldPath.Index(i)
		if f.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(f.Path, p.Child("path"))...)
		if f.FieldRef != nil {
			errs = append(errs, validateObjectFieldSelector(f.FieldRef, volumeFieldPaths, p.Child("fieldRef"))...)
			if f.ResourceFieldRef != nil {
				errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
			}
		} else if f.ResourceFieldRef != nil {
			errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, false, p.Child("resourceFieldRef"))...)
		} else {
			errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
		}
		errs = append(errs, validateFileMode(f.Mode, p.Child("mode"))...)
	}
	return errs
}

func validateProjected(proj *v1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := validateFileMode(proj.DefaultMode, fldPath.Child("defaultMode"))
	srcsPath := fldPath.Child("sources")
	for i, s := range proj.Sources {
		p := srcsPath.Index(i)
		n := 0
		count := func(set bool, name string) bool {
			if !set {
				return false
			}
			n++
			if n > 1 {
				errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 volume type per source"))
				return false
			}
			return true
		}
		if count(s.Secret != nil, "secret") {
			if s.Secret.Name == "" {
				errs = append(errs, field.Required(p.Child("secret", "name"), ""))
			}
			errs = append(errs, validateKeyToPaths(s.Secret.Items, p.Child("secret", "items"))...)
		}
		if count(s.ConfigMap != nil, "configMap") {
			if s.ConfigMap.Name == "" {
				errs = append(errs, field.Required(p.Child("configMap", "name"), ""))
			}
			errs = append(errs, validateKeyToPaths(s.ConfigMap.Items, p.Child("configMap", "items"))...)
		}
		if count(s.DownwardAPI != nil, "downwardAPI") {
			errs = append(errs, validateDownwardAPIFiles(s.DownwardAPI.Items, p.Child("downwardAPI", "items"))...)
		}
		if count(s.ServiceAccountToken != nil, "serviceAccountToken") {
			sp := p.Child("serviceAccountToken")
			if s.ServiceAccountToken.ExpirationSeconds != nil {
				switch e := *s.ServiceAccountToken.ExpirationSeconds; {
				case e < 600:
					errs = append(errs, field.Invalid(sp.Child("expirationSeconds"), e, "may not specify a duration less than 10 minutes"))
				case e > math.MaxUint32:
					errs = append(errs, field.Invalid(sp.Child("expirationSeconds"), e, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if s.ServiceAccountToken.Path == "" {
				errs = append(errs, field.Required(sp.Child("path"), ""))
			}
		}
		if count(s.ClusterTrustBundle != nil, "clusterTrustBundle") {
			if s.ClusterTrustBundle.Path == "" {
				errs = append(errs, field.Required(p.Child("clusterTrustBundle", "path"), ""))
			}
		}
		if count(s.PodCertificate != nil, "podCertificate") && s.PodCertificate.SignerName == "" {
			errs = append(errs, field.Required(p.Child("podCertificate", "signerName"), ""))
		}
		if n == 0 {
			errs = append(errs, field.Required(p, "must specify exactly 1 volume type"))
		}
	}
	return errs
}
