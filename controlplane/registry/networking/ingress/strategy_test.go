package ingress

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/scheme"
)

func sample() *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: networkingv1.IngressSpec{
		DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.9"}}}}}
}

func TestCreateClearsStatusAndSetsGeneration(t *testing.T) {
	ing := sample()
	Kind.Strategy(scheme.New()).PrepareForCreate(context.Background(), ing)
	if len(ing.Status.LoadBalancer.Ingress) != 0 || ing.Generation != 1 {
		t.Fatalf("status %+v, generation %d", ing.Status, ing.Generation)
	}
}

func TestUpdateKeepsStatusAndBumpsGenerationOnSpecChange(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	old := sample()
	old.Generation = 3
	upd := old.DeepCopy()
	upd.Status = networkingv1.IngressStatus{}
	upd.Labels = map[string]string{"a": "b"}
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Generation != 3 || len(upd.Status.LoadBalancer.Ingress) != 1 {
		t.Fatalf("metadata-only update: generation %d, status %+v", upd.Generation, upd.Status)
	}
	upd = old.DeepCopy()
	upd.Spec.DefaultBackend.Service.Port.Number = 8080
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Generation != 4 {
		t.Fatalf("spec update: generation %d, want 4", upd.Generation)
	}
}

// The Conformance spec patches an annotation together with the status
// through /status and expects both kept, as upstream's status strategy
// resets only the spec.
func TestStatusUpdateKeepsSpecButNotMetadata(t *testing.T) {
	s := Kind.StatusStrategy(scheme.New())
	old := sample()
	upd := old.DeepCopy()
	upd.Spec.DefaultBackend = nil
	upd.Annotations = map[string]string{"patchedstatus": "true"}
	upd.Status.LoadBalancer.Ingress[0].IP = "169.1.1.1"
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Spec.DefaultBackend == nil || upd.Annotations["patchedstatus"] != "true" || upd.Status.LoadBalancer.Ingress[0].IP != "169.1.1.1" {
		t.Fatalf("after status update: %+v", upd)
	}
}
