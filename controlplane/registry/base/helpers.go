package base

import (
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OrNone returns s, or "<none>" when it is empty, as kubectl's printers do.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// AccessModes formats persistent volume access modes as kubectl does
// (RWO,ROX,RWX,RWOP, each once, in that order).
func AccessModes(modes []v1.PersistentVolumeAccessMode) string {
	has := map[v1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  v1.PersistentVolumeAccessMode
		short string
	}{{v1.ReadWriteOnce, "RWO"}, {v1.ReadOnlyMany, "ROX"}, {v1.ReadWriteMany, "RWX"}, {v1.ReadWriteOncePod, "RWOP"}} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// SortedKeys returns a string set's members in order.
func SortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ContainerCells returns the CONTAINERS and IMAGES cells of a workload: the
// template's container names and images, comma-separated.
func ContainerCells(containers []v1.Container) (names, images string) {
	n := make([]string, 0, len(containers))
	im := make([]string, 0, len(containers))
	for _, c := range containers {
		n = append(n, c.Name)
		im = append(im, c.Image)
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// Selector formats a label selector as kubectl's SELECTOR column
// ("<none>" when it selects everything, "<invalid>" when it cannot parse).
func Selector(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "<invalid>"
	}
	return OrNone(s.String())
}

// BindingColumns are the RBAC binding table's columns.
var BindingColumns = []metav1.TableColumnDefinition{
	NameColumn,
	Col("Role", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
	AgeColumn,
	Wide(Col("Users", "Users in the roleBinding")),
	Wide(Col("Groups", "Groups in the roleBinding")),
	Wide(Col("ServiceAccounts", "ServiceAccounts in the roleBinding")),
}

// BindingRow returns a role binding's or cluster role binding's cells:
// NAME, ROLE (Kind/name), AGE, USERS, GROUPS, SERVICEACCOUNTS (ns/name).
func BindingRow(name string, created metav1.Time, ref rbacv1.RoleRef, subjects []rbacv1.Subject, now time.Time) []interface{} {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return []interface{}{name, ref.Kind + "/" + ref.Name, Age(created, now), strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
