package admission_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"

	berthadm "berth/controlplane/admission"
)

func quotaObj(name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}

// quotaPlugin serves the quotas from a fake clientset; its lister reads the
// clientset's tracker, so it sees what the plugin wrote.
func quotaPlugin(t *testing.T, quotas ...*corev1.ResourceQuota) (*berthadm.ResourceQuota, *fake.Clientset) {
	t.Helper()
	var objs []runtime.Object
	for _, q := range quotas {
		objs = append(objs, q)
	}
	client := fake.NewClientset(objs...)
	var items []any
	for _, q := range quotas {
		items = append(items, q)
	}
	p, err := berthadm.NewResourceQuota(berthadm.ResourceQuotaConfig{
		Quotas: corelisters.NewResourceQuotaLister(indexer(t, items...)),
		Client: client,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, client
}

func used(t *testing.T, client *fake.Clientset, name string, res corev1.ResourceName) string {
	t.Helper()
	q, err := client.CoreV1().ResourceQuotas("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := q.Status.Used[res]
	return v.String()
}

// A quota of 2 pods refuses the third with upstream's message.
func TestResourceQuotaPods(t *testing.T) {
	p, client := quotaPlugin(t, quotaObj("pods", rl("pods", "2"), rl("pods", "0")))
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := admit(ctx, p, podCreate(newPod("ns", fmt.Sprint("p", i)), alice)); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
	}
	if got := used(t, client, "pods", "pods"); got != "2" {
		t.Fatalf("used pods %s, want 2", got)
	}
	err := admit(ctx, p, podCreate(newPod("ns", "p2"), alice))
	wantStatus(t, err, 403, `pods "p2" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`)
	if got := used(t, client, "pods", "pods"); got != "2" {
		t.Fatalf("a refused pod was charged: used %s", got)
	}
}

func TestResourceQuotaCompute(t *testing.T) {
	p, client := quotaPlugin(t,
		quotaObj("compute", rl("requests.cpu", "1", "limits.memory", "1Gi"), rl("requests.cpu", "0", "limits.memory", "0")),
		quotaObj("counts", rl("count/configmaps", "1", "configmaps", "5"), rl("count/configmaps", "1", "configmaps", "1")),
	)
	ctx := context.Background()
	pod := newPod("ns", "big")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "600m"), Limits: rl("memory", "512Mi")}
	if err := admit(ctx, p, podCreate(pod, alice)); err != nil {
		t.Fatal(err)
	}
	if got := used(t, client, "compute", "requests.cpu"); got != "600m" {
		t.Errorf("requests.cpu used %s, want 600m", got)
	}
	pod2 := pod.DeepCopy()
	pod2.Name = "big2"
	wantStatus(t, admit(ctx, p, podCreate(pod2, alice)), 403,
		`exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1`)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	err := admit(ctx, p, createAttrs(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps"), "ns", "c", alice))
	wantStatus(t, err, 403, `exceeded quota: counts, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1`)
}

func TestResourceQuotaStatusUnknown(t *testing.T) {
	p, _ := quotaPlugin(t, quotaObj("fresh", rl("pods", "2"), nil))
	wantStatus(t, admit(context.Background(), p, podCreate(newPod("ns", "p"), alice)), 403, "status unknown for quota: fresh, resources: pods")
}

func TestResourceQuotaDryRunDoesNotCharge(t *testing.T) {
	p, client := quotaPlugin(t, quotaObj("pods", rl("pods", "2"), rl("pods", "0")))
	a := admission.NewAttributesRecord(newPod("ns", "p"), nil, podGVK, "ns", "p", podGVR, "", admission.Create, &metav1.CreateOptions{}, true, alice)
	if err := admit(context.Background(), p, a); err != nil {
		t.Fatal(err)
	}
	if got := used(t, client, "pods", "pods"); got != "0" {
		t.Fatalf("dry run charged: used %s", got)
	}
}

// Another server charged the quota meanwhile: the plugin's first write
// conflicts; it re-reads the quota and sees the other charge.
func TestResourceQuotaConflictRereads(t *testing.T) {
	p, client := quotaPlugin(t, quotaObj("pods", rl("pods", "2"), rl("pods", "0")))
	var conflicts atomic.Int32
	client.PrependReactor("update", "resourcequotas", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || conflicts.Add(1) > 1 {
			return false, nil, nil
		}
		// Simulate the other server's write landing first.
		q, _ := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("resourcequotas"), "ns", "pods")
		rq := q.(*corev1.ResourceQuota).DeepCopy()
		rq.Status.Used = rl("pods", "2")
		if err := client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("resourcequotas"), rq, "ns"); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewConflict(corev1.Resource("resourcequotas"), "pods", fmt.Errorf("the object has been modified"))
	})
	err := admit(context.Background(), p, podCreate(newPod("ns", "p"), alice))
	wantStatus(t, err, 403, "exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2")
	if conflicts.Load() != 1 {
		t.Fatalf("status writes attempted after the conflict: %d", conflicts.Load())
	}
}

// Concurrent creates never take more than the hard limit.
func TestResourceQuotaConcurrentCreates(t *testing.T) {
	p, client := quotaPlugin(t, quotaObj("pods", rl("pods", "5"), rl("pods", "0")))
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if admit(context.Background(), p, podCreate(newPod("ns", fmt.Sprint("p", i)), alice)) == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 5 {
		t.Fatalf("%d creates admitted, want 5", ok.Load())
	}
	if got := used(t, client, "pods", "pods"); got != "5" {
		t.Fatalf("used %s, want 5", got)
	}
	if locks, _ := p.LockedNamespaces(); locks != 0 {
		t.Fatalf("%d namespace locks left after every charge ended, want 0", locks)
	}
}

// update is an Update of a namespaced core object from old to obj.
func update(resource string, obj, old runtime.Object, name string) admission.Attributes {
	kind := map[string]string{"services": "Service", "persistentvolumeclaims": "PersistentVolumeClaim", "pods": "Pod"}[resource]
	return admission.NewAttributesRecord(obj, old, corev1.SchemeGroupVersion.WithKind(kind), "ns", name,
		corev1.SchemeGroupVersion.WithResource(resource), "", admission.Update, &metav1.UpdateOptions{}, false, alice)
}

func service(typ corev1.ServiceType, ports int) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.ServiceSpec{Type: typ}}
	for i := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: int32(80 + i)})
	}
	return svc
}

// An update is charged what it adds, as upstream's evaluators: a ClusterIP
// Service made NodePort or LoadBalancer, a claim resized; an update adding
// nothing is not charged, and pods are charged on create only.
func TestResourceQuotaChargesUpdates(t *testing.T) {
	p, client := quotaPlugin(t,
		quotaObj("svc", rl("services.nodeports", "2", "services.loadbalancers", "1", "services", "5"),
			rl("services.nodeports", "0", "services.loadbalancers", "0", "services", "1")),
		quotaObj("storage", rl("requests.storage", "10Gi"), rl("requests.storage", "5Gi")))
	ctx := context.Background()

	// ClusterIP -> NodePort with 3 ports: over the 2 node ports.
	err := admit(ctx, p, update("services", service(corev1.ServiceTypeNodePort, 3), service(corev1.ServiceTypeClusterIP, 3), "web"))
	wantStatus(t, err, 403, "exceeded quota: svc, requested: services.nodeports=3, used: services.nodeports=0, limited: services.nodeports=2")
	// ClusterIP -> NodePort with 2 ports: charged 2 node ports, no service.
	if err := admit(ctx, p, update("services", service(corev1.ServiceTypeNodePort, 2), service(corev1.ServiceTypeClusterIP, 2), "web")); err != nil {
		t.Fatal(err)
	}
	if np, svcs := used(t, client, "svc", "services.nodeports"), used(t, client, "svc", "services"); np != "2" || svcs != "1" {
		t.Fatalf("after ClusterIP -> NodePort: node ports %s services %s, want 2 and 1", np, svcs)
	}
	// NodePort -> LoadBalancer, same ports: one load balancer, no new node port.
	if err := admit(ctx, p, update("services", service(corev1.ServiceTypeLoadBalancer, 2), service(corev1.ServiceTypeNodePort, 2), "web")); err != nil {
		t.Fatal(err)
	}
	if lb, np := used(t, client, "svc", "services.loadbalancers"), used(t, client, "svc", "services.nodeports"); lb != "1" || np != "2" {
		t.Fatalf("after NodePort -> LoadBalancer: load balancers %s node ports %s, want 1 and 2", lb, np)
	}
	// A second load balancer is refused.
	err = admit(ctx, p, update("services", service(corev1.ServiceTypeLoadBalancer, 0), service(corev1.ServiceTypeClusterIP, 0), "other"))
	wantStatus(t, err, 403, "exceeded quota: svc, requested: services.loadbalancers=1, used: services.loadbalancers=1, limited: services.loadbalancers=1")

	// A claim resized from 5Gi to 8Gi is charged 3Gi; then to 12Gi refused.
	claim := func(size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", size)}}}
	}
	if err := admit(ctx, p, update("persistentvolumeclaims", claim("8Gi"), claim("5Gi"), "data")); err != nil {
		t.Fatal(err)
	}
	if got := used(t, client, "storage", "requests.storage"); got != "8Gi" {
		t.Fatalf("after a resize by 3Gi: requests.storage %s, want 8Gi", got)
	}
	err = admit(ctx, p, update("persistentvolumeclaims", claim("12Gi"), claim("8Gi"), "data"))
	wantStatus(t, err, 403, "exceeded quota: storage, requested: requests.storage=4Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi")
	// Shrinking or keeping the size charges nothing.
	if err := admit(ctx, p, update("persistentvolumeclaims", claim("8Gi"), claim("8Gi"), "data")); err != nil {
		t.Fatal(err)
	}
	if got := used(t, client, "storage", "requests.storage"); got != "8Gi" {
		t.Fatalf("an update adding nothing was charged: requests.storage %s", got)
	}
}

// Pods are charged on create only: an update of a running pod is not.
func TestResourceQuotaPodUpdatesAreNotCharged(t *testing.T) {
	p, client := quotaPlugin(t, quotaObj("pods", rl("pods", "1"), rl("pods", "1")))
	if err := admit(context.Background(), p, update("pods", newPod("ns", "p"), newPod("ns", "p"), "p")); err != nil {
		t.Fatalf("a pod update at the quota's limit: %v", err)
	}
	if got := used(t, client, "pods", "pods"); got != "1" {
		t.Fatalf("used %s, want 1", got)
	}
}

// A deleted quota is forgotten.
func TestResourceQuotaForgetsDeletedQuotas(t *testing.T) {
	q := quotaObj("pods", rl("pods", "5"), rl("pods", "0"))
	client := fake.NewClientset(q)
	quotas := indexer(t, q)
	p, err := berthadm.NewResourceQuota(berthadm.ResourceQuotaConfig{Quotas: corelisters.NewResourceQuotaLister(quotas), Client: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admit(ctx, p, podCreate(newPod("ns", "a"), alice)); err != nil {
		t.Fatal(err)
	}
	if _, written := p.LockedNamespaces(); written != 1 {
		t.Fatalf("remembered %d written quotas, want 1", written)
	}
	if err := client.CoreV1().ResourceQuotas("ns").Delete(ctx, "pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := quotas.Delete(q); err != nil {
		t.Fatal(err)
	}
	if err := admit(ctx, p, podCreate(newPod("ns", "b"), alice)); err != nil {
		t.Fatal(err)
	}
	if locks, written := p.LockedNamespaces(); locks != 0 || written != 0 {
		t.Fatalf("after the quota's deletion: %d locks, %d written quotas remembered, want 0 and 0", locks, written)
	}
}
