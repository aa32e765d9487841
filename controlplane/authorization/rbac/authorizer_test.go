package rbac_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/authorization/rbac"
	"berth/controlplane/authorization/rbac/bootstrap"
	"berth/internal/errdefs"
)

// policy builds an authorizer over real client-go listers backed by indexers.
type policy struct {
	roles, roleBindings, clusterRoles, clusterRoleBindings cache.Indexer
}

func newPolicy() *policy {
	ns := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	return &policy{
		roles:               cache.NewIndexer(cache.MetaNamespaceKeyFunc, ns),
		roleBindings:        cache.NewIndexer(cache.MetaNamespaceKeyFunc, ns),
		clusterRoles:        cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		clusterRoleBindings: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
}

func (p *policy) add(t *testing.T, objs ...any) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *rbacv1.Role:
			err = p.roles.Add(o)
		case *rbacv1.RoleBinding:
			err = p.roleBindings.Add(o)
		case *rbacv1.ClusterRole:
			err = p.clusterRoles.Add(o)
		case *rbacv1.ClusterRoleBinding:
			err = p.clusterRoleBindings.Add(o)
		default:
			t.Fatalf("unexpected %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (p *policy) authorizer(t *testing.T) *rbac.Authorizer {
	t.Helper()
	a, err := rbac.New(rbac.Config{
		Roles:               rbaclisters.NewRoleLister(p.roles),
		RoleBindings:        rbaclisters.NewRoleBindingLister(p.roleBindings),
		ClusterRoles:        rbaclisters.NewClusterRoleLister(p.clusterRoles),
		ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(p.clusterRoleBindings),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// withBootstrap adds the default policy with aggregated rules filled in, as
// the aggregation controller would.
func (p *policy) withBootstrap(t *testing.T) {
	t.Helper()
	roles := bootstrap.ClusterRoles()
	// Aggregation is transitive (view → edit → admin): iterate to a fixed point.
	for range 3 {
		for _, r := range roles {
			if r.AggregationRule == nil {
				continue
			}
			rules, err := rbac.AggregatedRules(r, roles)
			if err != nil {
				t.Fatal(err)
			}
			r.Rules = rules
		}
	}
	for _, r := range roles {
		p.add(t, r)
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		p.add(t, b)
	}
}

func roleBinding(ns, name, kind, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   subjects,
	}
}

func userSubj(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func res(u user.Info, verb, ns, group, resource, sub, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: ns, APIGroup: group, Resource: resource,
		Subresource: sub, Name: name, ResourceRequest: true}
}

func nonRes(u user.Info, verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
}

func TestRuleMatching(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	cases := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"exact verb/group/resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			res(alice, "get", "ns", "", "pods", "", "p"), true},
		{"other verb", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			res(alice, "delete", "ns", "", "pods", "", "p"), false},
		{"verb wildcard", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			res(alice, "deletecollection", "ns", "", "pods", "", ""), true},
		{"other group", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"deployments"}},
			res(alice, "get", "ns", "apps", "deployments", "", "d"), false},
		{"group wildcard", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"deployments"}},
			res(alice, "get", "ns", "apps", "deployments", "", "d"), true},
		{"resource wildcard", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*"}},
			res(alice, "get", "ns", "", "secrets", "", "s"), true},
		{"resource grant does not cover subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			res(alice, "get", "ns", "", "pods", "log", "p"), false},
		{"subresource exact", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
			res(alice, "get", "ns", "", "pods", "log", "p"), true},
		{"subresource grant does not cover resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
			res(alice, "get", "ns", "", "pods", "", "p"), false},
		{"*/subresource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			res(alice, "update", "ns", "apps", "deployments", "scale", "d"), true},
		{"*/subresource other sub", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			res(alice, "update", "ns", "apps", "deployments", "status", "d"), false},
		{"resourceNames listed", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a", "b"}},
			res(alice, "get", "ns", "", "configmaps", "", "b"), true},
		{"resourceNames not listed", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			res(alice, "get", "ns", "", "configmaps", "", "c"), false},
		{"resourceNames and list without name", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			res(alice, "list", "ns", "", "configmaps", "", ""), false},
		{"nonResourceURL exact", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}},
			nonRes(alice, "get", "/healthz"), true},
		{"nonResourceURL exact other path", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}},
			nonRes(alice, "get", "/healthz/etcd"), false},
		{"nonResourceURL star suffix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}},
			nonRes(alice, "get", "/apis/apps/v1"), true},
		{"nonResourceURL star suffix not prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}},
			nonRes(alice, "get", "/api/v1"), false},
		{"nonResourceURL all", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
			nonRes(alice, "post", "/anything"), true},
		{"nonResourceURL verb", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}},
			nonRes(alice, "post", "/metrics"), false},
		{"resource rule never grants a URL", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			nonRes(alice, "get", "/healthz"), false},
		{"URL rule never grants a resource", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
			res(alice, "get", "ns", "", "pods", "", ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rbac.RuleAllows(tc.attrs, &tc.rule); got != tc.allow {
				t.Fatalf("RuleAllows = %v, want %v", got, tc.allow)
			}
			// The same rule through a Role and a RoleBinding in the namespace.
			p := newPolicy()
			p.add(t,
				&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{tc.rule}},
				&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "r"},
					Subjects: []rbacv1.Subject{userSubj("alice")}})
			d, reason, err := p.authorizer(t).Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			want := authorizer.DecisionNoOpinion
			if tc.allow {
				want = authorizer.DecisionAllow
				if !strings.Contains(reason, `ClusterRoleBinding "b" of ClusterRole "r" to User "alice"`) {
					t.Errorf("reason %q does not name the binding", reason)
				}
			}
			if d != want {
				t.Fatalf("Authorize = %v, want %v", d, want)
			}
		})
	}
}

func TestSubjects(t *testing.T) {
	p := newPolicy()
	p.add(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "reader"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}},
		roleBinding("team", "by-group", "Role", "reader", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "devs"}),
		roleBinding("team", "by-sa", "Role", "reader", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "bot"}),
		roleBinding("team", "by-sa-other-ns", "Role", "reader", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "ci", Namespace: "tools"}),
		roleBinding("team", "missing-role", "Role", "absent", userSubj("carol")),
	)
	a := p.authorizer(t)
	cases := []struct {
		name       string
		u          user.Info
		ns         string
		want       authorizer.Decision
		wantReason string
	}{
		{"group member", &user.DefaultInfo{Name: "bob", Groups: []string{"devs"}}, "team", authorizer.DecisionAllow, ""},
		{"not a member", &user.DefaultInfo{Name: "bob", Groups: []string{"ops"}}, "team", authorizer.DecisionNoOpinion, ""},
		{"service account defaulted to binding namespace", &user.DefaultInfo{Name: "system:serviceaccount:team:bot"}, "team", authorizer.DecisionAllow, ""},
		{"same SA name other namespace", &user.DefaultInfo{Name: "system:serviceaccount:other:bot"}, "team", authorizer.DecisionNoOpinion, ""},
		{"service account with explicit namespace", &user.DefaultInfo{Name: "system:serviceaccount:tools:ci"}, "team", authorizer.DecisionAllow, ""},
		{"role binding does not apply in another namespace", &user.DefaultInfo{Name: "bob", Groups: []string{"devs"}}, "elsewhere", authorizer.DecisionNoOpinion, ""},
		{"binding to a missing role reports not found", &user.DefaultInfo{Name: "carol"}, "team", authorizer.DecisionNoOpinion, `role "team/absent" not found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), res(tc.u, "get", tc.ns, "", "configmaps", "", "c"))
			if d != tc.want || err != nil {
				t.Fatalf("decision %v, err %v; want %v", d, err, tc.want)
			}
			if !strings.Contains(reason, tc.wantReason) {
				t.Fatalf("reason %q, want it to contain %q", reason, tc.wantReason)
			}
		})
	}
}

// A user bound to view in one namespace can list but not create there, and
// nothing in kube-system.
func TestViewInOneNamespace(t *testing.T) {
	p := newPolicy()
	p.withBootstrap(t)
	p.add(t, roleBinding("dev", "alice-view", "ClusterRole", "view", userSubj("alice")))
	a := p.authorizer(t)
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		{"list pods in dev", res(alice, "list", "dev", "", "pods", "", ""), authorizer.DecisionAllow},
		{"get pod log in dev", res(alice, "get", "dev", "", "pods", "log", "p"), authorizer.DecisionAllow},
		{"watch deployments in dev", res(alice, "watch", "dev", "apps", "deployments", "", ""), authorizer.DecisionAllow},
		{"create pods in dev", res(alice, "create", "dev", "", "pods", "", ""), authorizer.DecisionNoOpinion},
		{"delete configmap in dev", res(alice, "delete", "dev", "", "configmaps", "", "c"), authorizer.DecisionNoOpinion},
		{"view excludes secrets", res(alice, "get", "dev", "", "secrets", "", "s"), authorizer.DecisionNoOpinion},
		{"view excludes exec", res(alice, "create", "dev", "", "pods", "exec", "p"), authorizer.DecisionNoOpinion},
		{"list pods in kube-system", res(alice, "list", "kube-system", "", "pods", "", ""), authorizer.DecisionNoOpinion},
		{"get configmap in kube-system", res(alice, "get", "kube-system", "", "configmaps", "", "c"), authorizer.DecisionNoOpinion},
		{"list pods cluster-wide", res(alice, "list", "", "", "pods", "", ""), authorizer.DecisionNoOpinion},
		{"discovery via system:authenticated", nonRes(alice, "get", "/apis/apps/v1"), authorizer.DecisionAllow},
		{"self subject rules review via system:basic-user", res(alice, "create", "", "authorization.k8s.io", "selfsubjectrulesreviews", "", ""), authorizer.DecisionAllow},
		{"metrics not granted", nonRes(alice, "get", "/metrics"), authorizer.DecisionNoOpinion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.want {
				t.Fatalf("decision %v (%s), want %v", d, reason, tc.want)
			}
		})
	}

	admin := &user.DefaultInfo{Name: "root", Groups: []string{"system:masters"}}
	if d, _, _ := a.Authorize(context.Background(), res(admin, "delete", "kube-system", "", "secrets", "", "x")); d != authorizer.DecisionAllow {
		t.Fatalf("system:masters via cluster-admin binding: %v", d)
	}
}

func TestRulesFor(t *testing.T) {
	p := newPolicy()
	p.withBootstrap(t)
	p.add(t, roleBinding("dev", "alice-view", "ClusterRole", "view", userSubj("alice")))
	a := p.authorizer(t)
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}

	has := func(rules []authorizer.ResourceRuleInfo, verb, group, resource string) bool {
		for _, r := range rules {
			rule := rbacv1.PolicyRule{Verbs: r.GetVerbs(), APIGroups: r.GetAPIGroups(), Resources: r.GetResources(), ResourceNames: r.GetResourceNames()}
			if rbac.VerbMatches(&rule, verb) && rbac.APIGroupMatches(&rule, group) && rbac.ResourceMatches(&rule, resource, "") {
				return true
			}
		}
		return false
	}
	resRules, nonResRules, incomplete, err := a.RulesFor(context.Background(), alice, "dev")
	if err != nil || incomplete {
		t.Fatalf("RulesFor: incomplete=%v err=%v", incomplete, err)
	}
	if !has(resRules, "list", "", "pods") || has(resRules, "create", "", "pods") {
		t.Errorf("dev rules should list but not create pods: %v", resRules)
	}
	if !has(resRules, "create", "authorization.k8s.io", "selfsubjectrulesreviews") {
		t.Errorf("cluster-wide basic-user rule missing")
	}
	foundAPI := false
	for _, r := range nonResRules {
		for _, u := range r.GetNonResourceURLs() {
			if u == "/api" {
				foundAPI = true
			}
		}
	}
	if !foundAPI {
		t.Errorf("non-resource rules lack system:discovery's /api: %v", nonResRules)
	}
	resRules, _, _, err = a.RulesFor(context.Background(), alice, "kube-system")
	if err != nil {
		t.Fatal(err)
	}
	if has(resRules, "list", "", "pods") {
		t.Errorf("kube-system rules must not list pods")
	}
}

func TestNewRequiresListers(t *testing.T) {
	_, err := rbac.New(rbac.Config{})
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "ClusterRoleBindings") {
		t.Fatalf("New(empty) = %v", err)
	}
}
