package apipolicy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth/integration/harness"
)

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none:1"}}},
			},
		},
	}
}

// deploymentPolicy is a policy on creates and updates of Deployments.
func deploymentPolicy(name string, validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: validations,
		},
	}
}

// bindInNamespace binds policy in ns's test label only.
func bindInNamespace(name, policy string, ns *corev1.Namespace, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ValidationActions: actions,
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: ns.Labels},
			},
		},
	}
}

func createPolicy(t *testing.T, admin kubernetes.Interface, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	ctx := context.Background()
	reg := admin.AdmissionregistrationV1()
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.ValidatingAdmissionPolicies().Delete(ctx, p.Name, metav1.DeleteOptions{}) })
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.ValidatingAdmissionPolicyBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}) })
}

// waitRefused creates Deployment d in ns until the policies, which take
// effect asynchronously, refuse it; it returns the refusal.
func waitRefused(t *testing.T, admin kubernetes.Interface, ns string, d *appsv1.Deployment) error {
	t.Helper()
	var refusal error
	harness.WaitFor(t, 30*time.Second, "the policy to refuse Deployment "+d.Name, func() (bool, string) {
		_, err := admin.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
		if err == nil {
			_ = admin.AppsV1().Deployments(ns).Delete(context.Background(), d.Name, metav1.DeleteOptions{})
			return false, "created"
		}
		refusal = err
		return true, ""
	})
	return refusal
}

// TestPolicyRefusesDeployment: a policy (with a variable and a message
// expression) bound with Deny refuses a Deployment with too many replicas
// as upstream (422, reason Invalid, the policy's and binding's names and
// the evaluated message), lets a smaller one and one in an unselected
// namespace through, and kubectl prints the refusal; a policy whose CEL
// does not compile is refused naming the field.
func TestPolicyRefusesDeployment(t *testing.T) {
	t.Parallel()
	admin := shared.Client(t)
	ns := newNamespace(t, admin, "vap-deny")
	other := newNamespace(t, admin, "vap-deny-other")
	p := deploymentPolicy("max-replicas.apipolicy.test", admissionregistrationv1.Validation{
		Expression:        "variables.replicas <= 3",
		MessageExpression: "'replicas must be at most 3, got ' + string(variables.replicas)",
	})
	p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "replicas", Expression: "object.spec.replicas"}}
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "replicas", ValueExpression: "string(object.spec.replicas)"}}
	createPolicy(t, admin, p, bindInNamespace("max-replicas-deny.apipolicy.test", p.Name, ns, admissionregistrationv1.Deny))

	err := waitRefused(t, admin, ns.Name, deployment("big", 5))
	want := "ValidatingAdmissionPolicy 'max-replicas.apipolicy.test' with binding 'max-replicas-deny.apipolicy.test' denied request: replicas must be at most 3, got 5"
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("refusal = %v (invalid: %v), want 422 with %q", err, apierrors.IsInvalid(err), want)
	}
	if _, err := admin.AppsV1().Deployments(ns.Name).Create(context.Background(), deployment("small", 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("2 replicas: %v", err)
	}
	if _, err := admin.AppsV1().Deployments(other.Name).Create(context.Background(), deployment("big", 5), metav1.CreateOptions{}); err != nil {
		t.Fatalf("5 replicas outside the bound namespace: %v", err)
	}
	// An update is checked too (not /scale: the rule names deployments only).
	_, stderr, err := kubectl(t, "", "-n", ns.Name, "patch", "deployment/small", "-p", `{"spec":{"replicas":4}}`)
	if err == nil || !strings.Contains(stderr, "got 4") {
		t.Fatalf("kubectl patch to 4 replicas: err %v, stderr %q", err, stderr)
	}
	_, stderr, err = kubectl(t, "", "-n", ns.Name, "create", "deployment", "huge", "--image=registry.invalid/none:1", "--replicas=9")
	if err == nil || !strings.Contains(stderr, "denied request: replicas must be at most 3, got 9") {
		t.Fatalf("kubectl create: err %v, stderr %q", err, stderr)
	}

	bad := deploymentPolicy("bad-cel.apipolicy.test", admissionregistrationv1.Validation{Expression: "object.spec.replicas <<= 3"})
	_, err = admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(context.Background(), bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.validations[0].expression: Invalid value: "object.spec.replicas <<= 3": compilation failed`) {
		t.Fatalf("policy with bad CEL: %v", err)
	}
}

// TestPolicyParams: a policy reading its limit from a ConfigMap named by
// the binding's paramRef follows the ConfigMap's changes, and with
// parameterNotFoundAction Deny refuses everything once it is gone.
func TestPolicyParams(t *testing.T) {
	t.Parallel()
	admin := shared.Client(t)
	ctx := context.Background()
	ns := newNamespace(t, admin, "vap-params")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"maxReplicas": "2"}}
	if _, err := admin.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := deploymentPolicy("param-replicas.apipolicy.test", admissionregistrationv1.Validation{
		Expression:        "object.spec.replicas <= int(params.data.maxReplicas)",
		MessageExpression: "'at most ' + params.data.maxReplicas + ' replicas'",
	})
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	deny := admissionregistrationv1.DenyAction
	b := bindInNamespace("param-replicas.apipolicy.test", p.Name, ns, admissionregistrationv1.Deny)
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: ns.Name, ParameterNotFoundAction: &deny}
	createPolicy(t, admin, p, b)

	if err := waitRefused(t, admin, ns.Name, deployment("three", 3)); !strings.Contains(fmt.Sprint(err), "at most 2 replicas") {
		t.Fatalf("with maxReplicas 2: %v", err)
	}
	cm.Data["maxReplicas"] = "5"
	if _, err := admin.CoreV1().ConfigMaps(ns.Name).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 30*time.Second, "the new limit to apply", func() (bool, string) {
		_, err := admin.AppsV1().Deployments(ns.Name).Create(ctx, deployment("three", 3), metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if err := admin.CoreV1().ConfigMaps(ns.Name).Delete(ctx, "limits", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := waitRefused(t, admin, ns.Name, deployment("one", 1))
	if !strings.Contains(fmt.Sprint(err), "param-replicas.apipolicy.test") {
		t.Fatalf("without the param: %v", err)
	}
}

// TestPolicyWarn: a binding with validationActions Warn lets the
// Deployment in, and kubectl prints the policy's message as a warning.
func TestPolicyWarn(t *testing.T) {
	t.Parallel()
	admin := shared.Client(t)
	ns := newNamespace(t, admin, "vap-warn")
	p := deploymentPolicy("warn-replicas.apipolicy.test", admissionregistrationv1.Validation{
		Expression: "object.spec.replicas >= 2",
		Message:    "a single replica is not highly available",
	})
	createPolicy(t, admin, p, bindInNamespace("warn-replicas.apipolicy.test", p.Name, ns, admissionregistrationv1.Warn))
	i := 0
	harness.WaitFor(t, 30*time.Second, "kubectl to print the policy's warning", func() (bool, string) {
		i++
		_, stderr, err := kubectl(t, "", "-n", ns.Name, "create", "deployment", fmt.Sprintf("single-%d", i), "--image=registry.invalid/none:1", "--replicas=1")
		if err != nil {
			t.Fatalf("kubectl create under a Warn binding: %v: %s", err, stderr)
		}
		want := "Warning: Validation failed for ValidatingAdmissionPolicy 'warn-replicas.apipolicy.test' with binding 'warn-replicas.apipolicy.test': a single replica is not highly available"
		return strings.Contains(stderr, want), stderr
	})
}

// TestPolicyTables: kubectl lists policies and bindings with upstream's
// columns.
func TestPolicyTables(t *testing.T) {
	t.Parallel()
	admin := shared.Client(t)
	ns := newNamespace(t, admin, "vap-table")
	p := deploymentPolicy("table.apipolicy.test", admissionregistrationv1.Validation{Expression: "true"})
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	b := bindInNamespace("table.apipolicy.test", p.Name, ns, admissionregistrationv1.Audit)
	allow := admissionregistrationv1.AllowAction
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "p", Namespace: ns.Name, ParameterNotFoundAction: &allow}
	createPolicy(t, admin, p, b)
	out, stderr, err := kubectl(t, "", "get", "validatingadmissionpolicies", p.Name)
	if err != nil || !strings.Contains(out, "VALIDATIONS") || !strings.Contains(out, "PARAMKIND") || !strings.Contains(out, "v1/ConfigMap") {
		t.Fatalf("kubectl get validatingadmissionpolicies: %v %s\n%s", err, stderr, out)
	}
	out, stderr, err = kubectl(t, "", "get", "validatingadmissionpolicybindings", b.Name)
	if err != nil || !strings.Contains(out, "POLICYNAME") || !strings.Contains(out, ns.Name+"/p") {
		t.Fatalf("kubectl get validatingadmissionpolicybindings: %v %s\n%s", err, stderr, out)
	}
}

// TestPolicyTypeChecking: the status controller type-checks a policy
// against the Deployment schema: a correct policy gets an empty
// status.typeChecking, one comparing an int to a string gets upstream's
// warnings, each naming its field.
func TestPolicyTypeChecking(t *testing.T) {
	t.Parallel()
	admin := shared.Client(t)
	ctx := context.Background()
	policies := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	check := func(p *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
		t.Helper()
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = policies.Delete(ctx, p.Name, metav1.DeleteOptions{}) })
		var warnings []admissionregistrationv1.ExpressionWarning
		harness.WaitFor(t, 30*time.Second, "type checking of "+p.Name, func() (bool, string) {
			got, err := policies.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Status.TypeChecking == nil {
				return false, fmt.Sprint(err)
			}
			if got.Status.ObservedGeneration != got.Generation {
				return false, "observedGeneration behind"
			}
			warnings = got.Status.TypeChecking.ExpressionWarnings
			return true, ""
		})
		return warnings
	}
	if w := check(deploymentPolicy("typed.apipolicy.test", admissionregistrationv1.Validation{Expression: "object.spec.replicas > 1"})); len(w) != 0 {
		t.Errorf("warnings for a well-typed policy: %v", w)
	}
	w := check(deploymentPolicy("confused.apipolicy.test", admissionregistrationv1.Validation{
		Expression:        "object.spec.replicas > '1'",
		MessageExpression: "'wants replicas > 1, got ' + object.spec.replicas",
	}))
	if len(w) != 2 || w[0].FieldRef != "spec.validations[0].expression" || !strings.Contains(w[0].Warning, "found no matching overload for '_>_' applied to '(int, string)'") ||
		w[1].FieldRef != "spec.validations[0].messageExpression" || !strings.Contains(w[1].Warning, "found no matching overload for '_+_' applied to '(string, int)'") {
		t.Errorf("warnings = %+v", w)
	}
}
