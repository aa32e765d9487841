package resources

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/apiserver"
	"berth/controlplane/authorization/rbac"
	"berth/controlplane/authorization/union"
)

// recordingStore stands for a generic store: Create returns the object.
type recordingStore struct {
	rest.StandardStorage
	created []runtime.Object
}

func (s *recordingStore) Create(_ context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	s.created = append(s.created, obj)
	return obj, nil
}

func TestGuardRBAC(t *testing.T) {
	idx := func() cache.Indexer { return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}) }
	roles, bindings, croles, cbindings := idx(), idx(), idx(), idx()
	podReader := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	_ = croles.Add(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"}, Rules: []rbacv1.PolicyRule{podReader}})
	_ = croles.Add(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}})
	_ = bindings.Add(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "team"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}})
	rbacAuthz, err := rbac.New(rbac.Config{Roles: rbaclisters.NewRoleLister(roles), RoleBindings: rbaclisters.NewRoleBindingLister(bindings),
		ClusterRoles: rbaclisters.NewClusterRoleLister(croles), ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(cbindings)})
	if err != nil {
		t.Fatal(err)
	}
	authz, err := union.New(union.Config{Authorizers: []authorizer.Authorizer{rbacAuthz}})
	if err != nil {
		t.Fatal(err)
	}
	set := &Set{ByGVR: map[schema.GroupVersionResource]*apiserver.Resource{}}
	stores := map[string]*recordingStore{}
	for _, r := range []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings"} {
		stores[r] = &recordingStore{}
		if err := set.Add(&apiserver.Resource{GroupVersion: rbacv1.SchemeGroupVersion, Resource: r, Kind: "X", Store: stores[r]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.GuardRBAC(RBACGuardConfig{Authorizer: authz, Rules: authz, RoleRefRules: rbacAuthz.RoleRefRules}); err != nil {
		t.Fatal(err)
	}
	as := func(name string, groups ...string) context.Context {
		return genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name, Groups: groups})
	}
	create := func(ctx context.Context, resource string, obj runtime.Object) error {
		_, err := set.ByGVR[rbacv1.SchemeGroupVersion.WithResource(resource)].Store.Create(ctx, obj, nil, &metav1.CreateOptions{})
		return err
	}
	role := func(rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "team"}, Rules: rules}
	}
	binding := func(role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "team"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	}
	if err := create(as("alice"), "roles", role(podReader)); err != nil {
		t.Fatalf("role within alice's rules: %v", err)
	}
	err = create(as("alice"), "roles", role(rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `is attempting to grant RBAC permissions not currently held`) {
		t.Fatalf("role granting delete: %v, want 403", err)
	}
	if err := create(as("alice"), "rolebindings", binding("pod-reader")); err != nil {
		t.Fatalf("binding a role alice holds: %v", err)
	}
	if err := create(as("alice"), "rolebindings", binding("cluster-admin")); !apierrors.IsForbidden(err) {
		t.Fatalf("binding cluster-admin: %v, want 403", err)
	}
	if err := create(as("alice"), "rolebindings", binding("absent")); !apierrors.IsForbidden(err) {
		t.Fatalf("binding a missing role: %v, want 403", err)
	}
	aggregated := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}}
	if err := create(as("alice"), "clusterroles", aggregated); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "aggregationRule") {
		t.Fatalf("aggregated clusterrole by alice: %v, want 403", err)
	}
	if err := create(as("root", user.SystemPrivilegedGroup), "clusterrolebindings", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}); err != nil {
		t.Fatalf("system:masters: %v", err)
	}
	if got := len(stores["roles"].created) + len(stores["rolebindings"].created) + len(stores["clusterrolebindings"].created) + len(stores["clusterroles"].created); got != 3 {
		t.Fatalf("%d objects reached the stores, want the 3 allowed", got)
	}
}
