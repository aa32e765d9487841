package admission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	berthadmission "berth/controlplane/admission"
	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
	"berth/internal/errdefs"
)

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

func TestValidatingAdmissionPolicyConfig(t *testing.T) {
	_, err := berthadmission.NewValidatingAdmissionPolicy(berthadmission.ValidatingPolicyConfig{})
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("empty config: %v", err)
	}
}

// TestValidatingAdmissionPolicyDenies: upstream's plugin, wired by
// NewValidatingAdmissionPolicy on informers of a fake clientset, refuses a
// Deployment its bound policy fails (422, the evaluated message) and lets
// a passing one and one outside the binding's namespace through.
func TestValidatingAdmissionPolicyDenies(t *testing.T) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "max-replicas", Generation: 1},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 3",
				MessageExpression: "'at most 3, got ' + string(object.spec.replicas)"}},
		},
	}
	defaults.ValidatingAdmissionPolicy(policy)
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "max-replicas", Generation: 1},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "max-replicas",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}}}},
	}
	defaults.ValidatingAdmissionPolicyBinding(binding)
	client := fake.NewClientset(policy, binding,
		namespace("guarded", corev1.NamespaceActive, map[string]string{"guarded": "yes"}),
		namespace("open", corev1.NamespaceActive, nil))
	factory := informers.NewSharedInformerFactory(client, 0)
	sch := scheme.New()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	stop := make(chan struct{})
	plugin, err := berthadmission.NewValidatingAdmissionPolicy(berthadmission.ValidatingPolicyConfig{
		Informers: factory, Client: client, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
		RESTMapper: mapper, Authorizer: allowAll{}, Stop: stop,
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()

	gvk, gvr := appsv1.SchemeGroupVersion.WithKind("Deployment"), appsv1.SchemeGroupVersion.WithResource("deployments")
	deploy := func(ns string, replicas int32) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
		return plugin.Validate(context.Background(), createAttrs(d, gvk, gvr, ns, "d", alice), admission.NewObjectInterfacesFromScheme(sch))
	}
	// The policy source compiles the policies about every second.
	var refusal error
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		refusal = deploy("guarded", 5)
		return refusal != nil, nil
	}); err != nil {
		t.Fatalf("never refused: %v", err)
	}
	wantStatus(t, refusal, 422, "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas' denied request: at most 3, got 5")
	if err := deploy("guarded", 2); err != nil {
		t.Errorf("2 replicas: %v", err)
	}
	if err := deploy("open", 5); err != nil {
		t.Errorf("outside the binding's namespaces: %v", err)
	}
}
