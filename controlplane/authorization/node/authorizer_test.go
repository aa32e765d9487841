package node_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/authorization/node"
)

func podOn(ns, name, nodeName string, mutate func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: nodeName, ServiceAccountName: "app", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

// start builds the authorizer over informers of a fake clientset holding objs.
func start(t *testing.T, objs ...any) (*node.Authorizer, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			_, err = client.CoreV1().Pods(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		case *corev1.PersistentVolume:
			_, err = client.CoreV1().PersistentVolumes().Create(context.Background(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	a, err := node.New(node.Config{Pods: factory.Core().V1().Pods(), PersistentVolumes: factory.Core().V1().PersistentVolumes()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), a.HasSynced) {
		t.Fatal("graph did not sync")
	}
	return a, client
}

var (
	node1 = &user.DefaultInfo{Name: "system:node:node1", Groups: []string{"system:nodes", "system:authenticated"}}
	node2 = &user.DefaultInfo{Name: "system:node:node2", Groups: []string{"system:nodes", "system:authenticated"}}
)

type req struct {
	verb, ns, group, resource, sub, name, fieldSelector string
}

func (r req) attrs(u user.Info) authorizer.AttributesRecord {
	a := authorizer.AttributesRecord{User: u, Verb: r.verb, Namespace: r.ns, APIGroup: r.group,
		Resource: r.resource, Subresource: r.sub, Name: r.name, ResourceRequest: true}
	if r.fieldSelector != "" {
		sel, err := fields.ParseSelector(r.fieldSelector)
		if err != nil {
			panic(err)
		}
		a.FieldSelectorRequirements = sel.Requirements()
	}
	return a
}

func TestNodeAuthorizer(t *testing.T) {
	web := podOn("shop", "web", "node1", func(s *corev1.PodSpec) {
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		s.Volumes = []corev1.Volume{
			{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projected-secret"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			}}}},
		}
		s.InitContainers = []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}}}}}}
		s.Containers[0].Env = []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-pass"}, Key: "k"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "flags"}, Key: "k"}}},
		}
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}}}
	})
	other := podOn("shop", "db", "node2", func(s *corev1.PodSpec) {
		s.ServiceAccountName = "db"
		s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-only"}}}}
	})
	pending := podOn("shop", "pending", "", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "unscheduled"}}}}
	})
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef: &corev1.ObjectReference{Namespace: "shop", Name: "data"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h",
			NodePublishSecretRef: &corev1.SecretReference{Namespace: "storage", Name: "csi-creds"}}}}}
	a, _ := start(t, web, other, pending, pv)

	cases := []struct {
		name string
		u    user.Info
		r    req
		want authorizer.Decision
	}{
		{"get own pod", node1, req{verb: "get", ns: "shop", resource: "pods", name: "web"}, authorizer.DecisionAllow},
		{"get other node's pod", node1, req{verb: "get", ns: "shop", resource: "pods", name: "db"}, authorizer.DecisionNoOpinion},
		{"list pods by own spec.nodeName", node1, req{verb: "list", resource: "pods", fieldSelector: "spec.nodeName=node1"}, authorizer.DecisionAllow},
		{"watch pods by own spec.nodeName", node1, req{verb: "watch", resource: "pods", fieldSelector: "spec.nodeName=node1"}, authorizer.DecisionAllow},
		{"list pods by other spec.nodeName", node1, req{verb: "list", resource: "pods", fieldSelector: "spec.nodeName=node2"}, authorizer.DecisionNoOpinion},
		{"list all pods", node1, req{verb: "list", resource: "pods"}, authorizer.DecisionNoOpinion},
		{"update own pod status", node1, req{verb: "update", ns: "shop", resource: "pods", sub: "status", name: "web"}, authorizer.DecisionAllow},
		{"patch other pod status", node1, req{verb: "patch", ns: "shop", resource: "pods", sub: "status", name: "db"}, authorizer.DecisionNoOpinion},
		{"update own pod spec", node1, req{verb: "update", ns: "shop", resource: "pods", name: "web"}, authorizer.DecisionNoOpinion},
		{"create mirror pod", node1, req{verb: "create", ns: "shop", resource: "pods"}, authorizer.DecisionAllow},
		{"delete own pod", node1, req{verb: "delete", ns: "shop", resource: "pods", name: "web"}, authorizer.DecisionAllow},
		{"delete other pod", node1, req{verb: "delete", ns: "shop", resource: "pods", name: "db"}, authorizer.DecisionNoOpinion},
		{"exec into pod", node1, req{verb: "create", ns: "shop", resource: "pods", sub: "exec", name: "web"}, authorizer.DecisionNoOpinion},
		{"proxy to own pod", node1, req{verb: "get", ns: "shop", resource: "pods", sub: "proxy", name: "web:8080"}, authorizer.DecisionNoOpinion},
		{"proxy to own node", node1, req{verb: "get", resource: "nodes", sub: "proxy", name: "node1"}, authorizer.DecisionNoOpinion},
		{"proxy to a service", node1, req{verb: "create", ns: "shop", resource: "services", sub: "proxy", name: "web"}, authorizer.DecisionNoOpinion},

		{"volume secret", node1, req{verb: "get", ns: "shop", resource: "secrets", name: "tls"}, authorizer.DecisionAllow},
		{"watch volume secret by name", node1, req{verb: "watch", ns: "shop", resource: "secrets", name: "tls"}, authorizer.DecisionAllow},
		{"imagePullSecret", node1, req{verb: "get", ns: "shop", resource: "secrets", name: "pull"}, authorizer.DecisionAllow},
		{"projected secret", node1, req{verb: "get", ns: "shop", resource: "secrets", name: "projected-secret"}, authorizer.DecisionAllow},
		{"env secretKeyRef", node1, req{verb: "get", ns: "shop", resource: "secrets", name: "db-pass"}, authorizer.DecisionAllow},
		{"init container envFrom secret", node1, req{verb: "get", ns: "shop", resource: "secrets", name: "init-env"}, authorizer.DecisionAllow},
		{"other node's pod's secret", node1, req{verb: "get", ns: "shop", resource: "secrets", name: "db-only"}, authorizer.DecisionNoOpinion},
		{"other node reads its own secret", node2, req{verb: "get", ns: "shop", resource: "secrets", name: "db-only"}, authorizer.DecisionAllow},
		{"unscheduled pod's secret", node1, req{verb: "get", ns: "shop", resource: "secrets", name: "unscheduled"}, authorizer.DecisionNoOpinion},
		{"same secret name other namespace", node1, req{verb: "get", ns: "other", resource: "secrets", name: "tls"}, authorizer.DecisionNoOpinion},
		{"list secrets", node1, req{verb: "list", ns: "shop", resource: "secrets"}, authorizer.DecisionNoOpinion},
		{"update referenced secret", node1, req{verb: "update", ns: "shop", resource: "secrets", name: "tls"}, authorizer.DecisionNoOpinion},
		{"volume configmap", node1, req{verb: "get", ns: "shop", resource: "configmaps", name: "settings"}, authorizer.DecisionAllow},
		{"projected configmap", node1, req{verb: "get", ns: "shop", resource: "configmaps", name: "kube-root-ca.crt"}, authorizer.DecisionAllow},
		{"env configMapKeyRef", node1, req{verb: "get", ns: "shop", resource: "configmaps", name: "flags"}, authorizer.DecisionAllow},
		{"envFrom configmap", node1, req{verb: "get", ns: "shop", resource: "configmaps", name: "env-cm"}, authorizer.DecisionAllow},
		{"unrelated configmap", node1, req{verb: "get", ns: "shop", resource: "configmaps", name: "nope"}, authorizer.DecisionNoOpinion},
		{"claim", node1, req{verb: "get", ns: "shop", resource: "persistentvolumeclaims", name: "data"}, authorizer.DecisionAllow},
		{"claim status update", node1, req{verb: "update", ns: "shop", resource: "persistentvolumeclaims", sub: "status", name: "data"}, authorizer.DecisionAllow},
		{"claim of other node", node2, req{verb: "get", ns: "shop", resource: "persistentvolumeclaims", name: "data"}, authorizer.DecisionNoOpinion},
		{"bound pv", node1, req{verb: "get", resource: "persistentvolumes", name: "pv-data"}, authorizer.DecisionAllow},
		{"bound pv other node", node2, req{verb: "get", resource: "persistentvolumes", name: "pv-data"}, authorizer.DecisionNoOpinion},
		{"pv's secret", node1, req{verb: "get", ns: "storage", resource: "secrets", name: "csi-creds"}, authorizer.DecisionAllow},
		{"pv's secret other node", node2, req{verb: "get", ns: "storage", resource: "secrets", name: "csi-creds"}, authorizer.DecisionNoOpinion},

		{"token for own pod's SA", node1, req{verb: "create", ns: "shop", resource: "serviceaccounts", sub: "token", name: "app"}, authorizer.DecisionAllow},
		{"token for other node's SA", node1, req{verb: "create", ns: "shop", resource: "serviceaccounts", sub: "token", name: "db"}, authorizer.DecisionNoOpinion},
		{"get own pod's serviceaccount", node1, req{verb: "get", ns: "shop", resource: "serviceaccounts", name: "app"}, authorizer.DecisionAllow},
		{"get other node's serviceaccount", node1, req{verb: "get", ns: "shop", resource: "serviceaccounts", name: "db"}, authorizer.DecisionNoOpinion},
		{"list serviceaccounts", node1, req{verb: "list", ns: "shop", resource: "serviceaccounts"}, authorizer.DecisionNoOpinion},
		{"update own pod's serviceaccount", node1, req{verb: "update", ns: "shop", resource: "serviceaccounts", name: "app"}, authorizer.DecisionNoOpinion},

		{"get any node", node1, req{verb: "get", resource: "nodes", name: "node2"}, authorizer.DecisionAllow},
		{"register node", node1, req{verb: "create", resource: "nodes"}, authorizer.DecisionAllow},
		{"update own node", node1, req{verb: "update", resource: "nodes", name: "node1"}, authorizer.DecisionAllow},
		{"patch own node status", node1, req{verb: "patch", resource: "nodes", sub: "status", name: "node1"}, authorizer.DecisionAllow},
		{"patch other node status", node1, req{verb: "patch", resource: "nodes", sub: "status", name: "node2"}, authorizer.DecisionNoOpinion},
		{"delete own node", node1, req{verb: "delete", resource: "nodes", name: "node1"}, authorizer.DecisionNoOpinion},
		{"own lease", node1, req{verb: "update", ns: "kube-node-lease", group: "coordination.k8s.io", resource: "leases", name: "node1"}, authorizer.DecisionAllow},
		{"create lease", node1, req{verb: "create", ns: "kube-node-lease", group: "coordination.k8s.io", resource: "leases"}, authorizer.DecisionAllow},
		{"other node's lease", node1, req{verb: "update", ns: "kube-node-lease", group: "coordination.k8s.io", resource: "leases", name: "node2"}, authorizer.DecisionNoOpinion},
		{"lease elsewhere", node1, req{verb: "get", ns: "kube-system", group: "coordination.k8s.io", resource: "leases", name: "node1"}, authorizer.DecisionNoOpinion},
		{"events", node1, req{verb: "create", ns: "shop", resource: "events"}, authorizer.DecisionAllow},
		{"list services", node1, req{verb: "list", resource: "services"}, authorizer.DecisionAllow},
		{"delete a deployment", node1, req{verb: "delete", ns: "shop", group: "apps", resource: "deployments", name: "d"}, authorizer.DecisionNoOpinion},

		{"not a node: user", &user.DefaultInfo{Name: "system:node:node1"}, req{verb: "get", ns: "shop", resource: "secrets", name: "tls"}, authorizer.DecisionNoOpinion},
		{"not a node: group only", &user.DefaultInfo{Name: "alice", Groups: []string{"system:nodes"}}, req{verb: "get", ns: "shop", resource: "secrets", name: "tls"}, authorizer.DecisionNoOpinion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.r.attrs(tc.u))
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.want {
				t.Fatalf("decision %v (%q), want %v", d, reason, tc.want)
			}
		})
	}
}

// The graph follows pod changes: a deleted pod's secrets become unreadable.
func TestGraphFollowsPods(t *testing.T) {
	p := podOn("ns", "p", "node1", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "shared"}}}}
	})
	q := p.DeepCopy()
	q.Name = "q"
	a, client := start(t, p, q)
	get := req{verb: "get", ns: "ns", resource: "secrets", name: "shared"}.attrs(node1)
	eventually := func(want authorizer.Decision) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			d, _, _ := a.Authorize(context.Background(), get)
			if d == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("decision %v, want %v", d, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	eventually(authorizer.DecisionAllow)
	// Two pods reference the secret: deleting one keeps it readable.
	if err := client.CoreV1().Pods("ns").Delete(context.Background(), "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("ns").Delete(context.Background(), "q", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(authorizer.DecisionNoOpinion)
	// A pod created later is picked up.
	r := p.DeepCopy()
	r.Name = "r"
	if _, err := client.CoreV1().Pods("ns").Create(context.Background(), r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(authorizer.DecisionAllow)
}

func TestGraphRefCounts(t *testing.T) {
	g := node.NewGraph()
	p := podOn("ns", "p", "node1", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "old"}}}}
	})
	g.SetPod(p)
	// An update that changes the reference drops the old one.
	p2 := p.DeepCopy()
	p2.Spec.Volumes[0].Secret.SecretName = "new"
	g.SetPod(p2)
	if node.Reachable(g, "node1", "secrets", "ns", "old") || !node.Reachable(g, "node1", "secrets", "ns", "new") {
		t.Fatal("update did not move the reference")
	}
	g.DeletePod("ns", "p")
	if node.Reachable(g, "node1", "secrets", "ns", "new") || node.Reachable(g, "node1", "pods", "ns", "p") {
		t.Fatal("delete left references")
	}
}
