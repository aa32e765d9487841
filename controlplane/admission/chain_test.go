package admission_test

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	berthadm "berth/controlplane/admission"
)

// A pod goes through the whole chain, built from informers as the
// apiserver will build it.
func TestChain(t *testing.T) {
	srv := newWebhookServer(t)
	client := fake.NewClientset(
		namespace("team", corev1.NamespaceActive, map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "default"}},
		&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypeContainer, DefaultRequest: rl("cpu", "100m"), Default: rl("cpu", "200m")}}}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sidecar"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{mutatingHook("inject.example.com", srv.clientConfig("/inject"), nil)}},
	)
	q := quotaObj("q", rl("pods", "1", "requests.cpu", "1"), rl("pods", "0", "requests.cpu", "0"))
	q.Namespace = "team"
	if _, err := client.CoreV1().ResourceQuotas("team").Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	cfg := berthadm.ConfigFromInformers(factory, client)
	var plugins []admission.Interface
	for _, name := range berthadm.Plugins {
		if name == berthadm.ValidatingAdmissionPolicyName {
			continue // needs a dynamic client; the server builds it
		}
		p, err := berthadm.NewPlugin(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		plugins = append(plugins, p)
	}
	chain := berthadm.NewChain(plugins...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}

	pod := newPod("team", "web")
	if err := admit(ctx, chain, podCreate(pod, alice)); err != nil {
		t.Fatal(err)
	}
	if got := containerNames(pod); len(got) != 2 || got[1] != "sidecar" {
		t.Errorf("containers %v: sidecar missing", got)
	}
	if q := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "100m" {
		t.Errorf("LimitRange default request %s, want 100m", q.String())
	}
	if pod.Spec.ServiceAccountName != "default" || len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Projected == nil {
		t.Errorf("service account token volume missing: %+v", pod.Spec.Volumes)
	}
	if len(pod.Spec.Tolerations) != 2 {
		t.Errorf("tolerations %v", pod.Spec.Tolerations)
	}
	got, err := client.CoreV1().ResourceQuotas("team").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Status.Used[corev1.ResourcePods]; u.String() != "1" {
		t.Errorf("quota used pods %s, want 1", u.String())
	}

	// The second pod exceeds the quota; a privileged pod violates baseline;
	// a pod in a missing namespace never gets that far.
	wantStatus(t, admit(ctx, chain, podCreate(newPod("team", "second"), alice)), 403, "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1")
	yes := true
	priv := newPod("team", "priv")
	priv.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	wantStatus(t, admit(ctx, chain, podCreate(priv, alice)), 403, `violates PodSecurity "baseline:latest"`)
	wantStatus(t, admit(ctx, chain, podCreate(newPod("nowhere", "p"), alice)), 404, `namespaces "nowhere" not found`)
}
