package bootstrap_test

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"

	"berth/controlplane/authorization/rbac"
	"berth/controlplane/authorization/rbac/bootstrap"
)

func TestDefaultsCarryUpstreamMetadata(t *testing.T) {
	want := map[string]bool{"cluster-admin": false, "admin": false, "edit": false, "view": false,
		"system:basic-user": false, "system:discovery": false, "system:public-info-viewer": false,
		"system:node": false, "system:node-proxier": false, "system:kube-scheduler": false,
		"system:kube-controller-manager": false, "system:monitoring": false, "system:node-bootstrapper": false}
	for _, r := range bootstrap.ClusterRoles() {
		if _, ok := want[r.Name]; ok {
			want[r.Name] = true
		}
		if r.Annotations[bootstrap.AutoUpdateAnnotation] != "true" || r.Labels[bootstrap.BootstrappingLabel] != "rbac-defaults" {
			t.Errorf("clusterrole %s: labels %v annotations %v", r.Name, r.Labels, r.Annotations)
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("default clusterrole %s missing", name)
		}
	}
	roles := map[string]*rbacv1.ClusterRole{}
	for _, r := range bootstrap.ClusterRoles() {
		roles[r.Name] = r
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		if roles[b.RoleRef.Name] == nil {
			t.Errorf("binding %s refers to unknown role %s", b.Name, b.RoleRef.Name)
		}
		if b.Annotations[bootstrap.AutoUpdateAnnotation] != "true" {
			t.Errorf("binding %s lacks autoupdate", b.Name)
		}
	}
	if roles["edit"].Labels[bootstrap.AggregateToAdmin] != "true" || roles["view"].Labels[bootstrap.AggregateToEdit] != "true" {
		t.Error("edit must aggregate into admin and view into edit")
	}
	if roles["admin"].AggregationRule == nil || len(roles["admin"].Rules) != 0 {
		t.Error("admin must be aggregated with rules left to the controller")
	}
}

func TestReconcile(t *testing.T) {
	ctx := context.Background()
	// An admin-customised view binding opted out of autoupdate, and a
	// cluster-admin binding missing its subject.
	optedOut := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:discovery",
		Annotations: map[string]string{bootstrap.AutoUpdateAnnotation: "false"}}}
	stripped := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}}}
	noSubjects := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}
	client := fake.NewClientset(optedOut, stripped, noSubjects)

	res, err := bootstrap.Reconcile(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.Created), len(bootstrap.ClusterRoles())+len(bootstrap.Roles())+len(bootstrap.ClusterRoleBindings())-3; got != want {
		t.Errorf("created %d objects, want %d: %v", got, want, res.Created)
	}
	list, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(bootstrap.ClusterRoles()) {
		t.Errorf("%d clusterroles, want %d", len(list.Items), len(bootstrap.ClusterRoles()))
	}
	d, _ := client.RbacV1().ClusterRoles().Get(ctx, "system:discovery", metav1.GetOptions{})
	if len(d.Rules) != 0 {
		t.Errorf("autoupdate=false role was changed: %v", d.Rules)
	}
	bu, _ := client.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if len(bu.Rules) < 3 || bu.Rules[0].APIGroups[0] != "example.com" {
		t.Errorf("basic-user should keep the admin's rule and gain the defaults: %v", bu.Rules)
	}
	ca, _ := client.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
	if len(ca.Subjects) != 1 || ca.Subjects[0].Name != "system:masters" {
		t.Errorf("cluster-admin subjects = %v", ca.Subjects)
	}

	// Second run: nothing to do.
	res, err = bootstrap.Reconcile(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 0 || len(res.Updated) != 0 {
		t.Errorf("second run changed %v %v", res.Created, res.Updated)
	}
}

// The aggregated roles are created with their rules, so view, edit and
// admin grant access before the aggregation controller runs, nested as
// upstream (admin ⊇ edit ⊇ view).
func TestReconcileCreatesAggregatedRolesWithRules(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	if _, err := bootstrap.Reconcile(ctx, client); err != nil {
		t.Fatal(err)
	}
	get := func(name string) *rbacv1.ClusterRole {
		r, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	attrs := func(verb, resource string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{Verb: verb, Resource: resource, Namespace: "ns", ResourceRequest: true}
	}
	view, edit, admin := get("view"), get("edit"), get("admin")
	for _, c := range []struct {
		role  *rbacv1.ClusterRole
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{view, attrs("list", "pods"), true},
		{view, attrs("create", "pods"), false},
		{view, attrs("get", "secrets"), false},
		{edit, attrs("list", "pods"), true},
		{edit, attrs("create", "pods"), true},
		{edit, attrs("create", "rolebindings"), false},
		{admin, attrs("list", "pods"), true},
		{admin, attrs("create", "pods"), true},
	} {
		if got := rbac.RulesAllow(c.attrs, c.role.Rules...); got != c.want {
			t.Errorf("%s %s %s: %v, want %v", c.role.Name, c.attrs.Verb, c.attrs.Resource, got, c.want)
		}
	}
	if !rbac.RulesAllow(authorizer.AttributesRecord{Verb: "create", APIGroup: "rbac.authorization.k8s.io", Resource: "rolebindings", ResourceRequest: true}, admin.Rules...) {
		t.Error("admin may not create rolebindings")
	}
}

// The node TLS bootstrap bindings: bootstrappers may create CSRs and get
// node client certificates auto-approved; nodes may renew their own.
func TestReconcileBindsNodeBootstrap(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	if _, err := bootstrap.Reconcile(ctx, client); err != nil {
		t.Fatal(err)
	}
	for binding, want := range map[string][2]string{
		bootstrap.NodeBootstrapperBinding:         {"system:node-bootstrapper", "system:bootstrappers"},
		bootstrap.NodeAutoApproveBootstrapBinding: {bootstrap.NodeClientCSRRole, "system:bootstrappers"},
		bootstrap.NodeAutoApproveRotationBinding:  {bootstrap.SelfNodeClientCSRRole, "system:nodes"},
	} {
		b, err := client.RbacV1().ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b.RoleRef.Name != want[0] || len(b.Subjects) != 1 || b.Subjects[0].Kind != rbacv1.GroupKind || b.Subjects[0].Name != want[1] {
			t.Errorf("%s: roleRef %v subjects %v, want %v", binding, b.RoleRef, b.Subjects, want)
		}
	}
	nodeClient, err := client.RbacV1().ClusterRoles().Get(ctx, bootstrap.NodeClientCSRRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rbac.RulesAllow(authorizer.AttributesRecord{Verb: "create", APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests",
		Subresource: "nodeclient", ResourceRequest: true}, nodeClient.Rules...) {
		t.Errorf("%s rules %v do not allow creating certificatesigningrequests/nodeclient", nodeClient.Name, nodeClient.Rules)
	}
}
