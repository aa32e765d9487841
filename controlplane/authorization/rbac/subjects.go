package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// appliesTo reports whether any of subjects names the user, one of its
// groups, or (for service accounts) its "system:serviceaccount:NS:NAME"
// identity. bindingNamespace is the namespace of a RoleBinding ("" for a
// ClusterRoleBinding); it defaults a ServiceAccount subject's namespace.
func appliesTo(u user.Info, subjects []rbacv1.Subject, bindingNamespace string) (int, bool) {
	for i := range subjects {
		if subjectMatches(u, &subjects[i], bindingNamespace) {
			return i, true
		}
	}
	return 0, false
}

func subjectMatches(u user.Info, s *rbacv1.Subject, bindingNamespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		for _, g := range u.GetGroups() {
			if g == s.Name {
				return true
			}
		}
		return false
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return false
		}
		return serviceaccount.MakeUsername(ns, s.Name) == u.GetName()
	default:
		return false
	}
}

// describeSubject renders a subject as upstream does in RBAC reasons:
// `User "alice"`, `Group "g"`, `ServiceAccount "name/ns"`.
func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return s.Kind + " \"" + s.Name + "/" + ns + "\""
	default:
		return s.Kind + " \"" + s.Name + "\""
	}
}
