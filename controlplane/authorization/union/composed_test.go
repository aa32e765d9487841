package union_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/authorization/node"
	"berth/controlplane/authorization/rbac"
	"berth/controlplane/authorization/rbac/bootstrap"
	"berth/controlplane/authorization/union"
	"berth/controlplane/controller"
	"berth/controlplane/controller/clusterroleaggregation"
)

// The authorizer the apiserver runs: system:masters, Node, RBAC over the
// bootstrap policy, all fed by informers.
func TestComposed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Spec: corev1.PodSpec{NodeName: "node1",
			Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}, Spec: corev1.PodSpec{NodeName: "node2",
			Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-pass"}}}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "dev-view"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "dev"}}},
	)
	if _, err := bootstrap.Reconcile(ctx, client); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	rbacInf := factory.Rbac().V1()
	agg, err := clusterroleaggregation.New(clusterroleaggregation.Config{Config: controller.Config{Client: client, Informers: factory}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rbac.New(rbac.Config{Roles: rbacInf.Roles().Lister(), RoleBindings: rbacInf.RoleBindings().Lister(),
		ClusterRoles: rbacInf.ClusterRoles().Lister(), ClusterRoleBindings: rbacInf.ClusterRoleBindings().Lister()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{Pods: factory.Core().V1().Pods(), PersistentVolumes: factory.Core().V1().PersistentVolumes()})
	if err != nil {
		t.Fatal(err)
	}
	u, err := union.New(union.Config{Authorizers: []authorizer.Authorizer{n, r}})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	aggDone := make(chan error, 1)
	go func() { aggDone <- agg.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-aggDone; factory.Shutdown() })
	factory.WaitForCacheSync(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), n.HasSynced) {
		t.Fatal("node graph did not sync")
	}

	node1 := &user.DefaultInfo{Name: "system:node:node1", Groups: []string{"system:nodes", user.AllAuthenticated}}
	dev := &user.DefaultInfo{Name: "dev", Groups: []string{user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	get := func(u user.Info, verb, ns, resource, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: ns, Resource: resource, Name: name, ResourceRequest: true}
	}
	decide := func(a authorizer.AttributesRecord) authorizer.Decision {
		d, _, _ := u.Authorize(ctx, a)
		return d
	}
	// view's rules arrive once the aggregation controller has filled them.
	pollUntil(t, func() bool { return decide(get(dev, "list", "app", "pods", "")) == authorizer.DecisionAllow })

	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		{"node reads its own pod's secret", get(node1, "get", "app", "secrets", "web-tls"), authorizer.DecisionAllow},
		{"node refused another node's pod's secret", get(node1, "get", "app", "secrets", "db-pass"), authorizer.DecisionNoOpinion},
		{"viewer lists pods in its namespace", get(dev, "list", "app", "pods", ""), authorizer.DecisionAllow},
		{"viewer may not create pods there", get(dev, "create", "app", "pods", ""), authorizer.DecisionNoOpinion},
		{"viewer sees nothing in kube-system", get(dev, "list", "kube-system", "pods", ""), authorizer.DecisionNoOpinion},
		{"viewer may not read secrets", get(dev, "get", "app", "secrets", "web-tls"), authorizer.DecisionNoOpinion},
		{"system:masters may do anything", get(admin, "delete", "kube-system", "secrets", "x"), authorizer.DecisionAllow},
	}
	for _, tc := range cases {
		if got := decide(tc.attrs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}

	// `kubectl auth can-i --list` (RulesFor) agrees with Authorize.
	res, _, _, err := u.RulesFor(ctx, dev, "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"get", "list", "watch", "create", "delete"} {
		for _, resource := range []string{"pods", "secrets", "configmaps"} {
			listed := false
			for _, rule := range res {
				pr := rbacv1.PolicyRule{Verbs: rule.GetVerbs(), APIGroups: rule.GetAPIGroups(), Resources: rule.GetResources(), ResourceNames: rule.GetResourceNames()}
				listed = listed || rbac.RuleAllows(get(dev, verb, "app", resource, ""), &pr)
			}
			allowed := decide(get(dev, verb, "app", resource, "")) == authorizer.DecisionAllow
			if listed != allowed {
				t.Errorf("%s %s: RulesFor lists %v, Authorize allows %v", verb, resource, listed, allowed)
			}
		}
	}
}
