package validation

import (
	"regexp"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// sysctlName is upstream's sysctl name syntax ("." or "/" separated segments).
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

const sysctlMaxLength = 253

// validatePodSecurityContext: valid user/group IDs, supplemental groups,
// sysctls, fsGroupChangePolicy, seccomp profile, and no shared process
// namespace together with hostPID (checked by the caller's spec).
func validatePodSecurityContext(sc *v1.PodSecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			errs = append(errs, field.Invalid(fldPath.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	if p := sc.FSGroupChangePolicy; p != nil && *p != v1.FSGroupChangeOnRootMismatch && *p != v1.FSGroupChangeAlways {
		errs = append(errs, field.NotSupported(fldPath.Child("fsGroupChangePolicy"), *p, []string{string(v1.FSGroupChangeOnRootMismatch), string(v1.FSGroupChangeAlways)}))
	}
	errs = append(errs, validateSysctls(sc.Sysctls, fldPath.Child("sysctls"))...)
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	return errs
}

func validateSysctls(sysctls []v1.Sysctl, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, s := range sysctls {
		p := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, "must have at most 253 characters and match regex "+sysctlName.String()))
		case names.Has(s.Name):
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		names.Insert(s.Name)
	}
	return errs
}

func validateSeccompProfile(sp *v1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case v1.SeccompProfileTypeLocalhost:
		if sp.LocalhostProfile == nil || *sp.LocalhostProfile == "" {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	case v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined:
		if sp.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), sp.Type, []string{string(v1.SeccompProfileTypeLocalhost), string(v1.SeccompProfileTypeRuntimeDefault), string(v1.SeccompProfileTypeUnconfined)}))
	}
	return errs
}

// validateSecurityContext (container level): valid user/group IDs, procMount
// value, seccomp profile, and allowPrivilegeEscalation=false not combined
// with privileged or CAP_SYS_ADMIN.
func validateSecurityContext(sc *v1.SecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	if pm := sc.ProcMount; pm != nil && *pm != v1.DefaultProcMount && *pm != v1.UnmaskedProcMount {
		errs = append(errs, field.NotSupported(fldPath.Child("procMount"), *pm, []string{string(v1.DefaultProcMount), string(v1.UnmaskedProcMount)}))
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if string(c) == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	return errs
}
