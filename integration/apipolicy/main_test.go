// Package apipolicy drives `berth server`'s ValidatingAdmissionPolicies and
// API Priority and Fairness from outside, with client-go and real kubectl:
// policies refusing and warning about Deployments, params from ConfigMaps,
// CEL compile errors naming the field; flow schemas and priority levels
// classifying clients (the PF response headers), throttling a noisy client
// while another keeps working, and the mandatory objects coming back.
package apipolicy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth/integration/harness"
)

// shared is the package's server, started by TestMain.
var shared *harness.Server

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithServer(m, "apipolicy", func(dir string) (s *harness.Server, err error) {
		shared, err = harness.LaunchServer(filepath.Join(dir, "server"), "--listen", "127.0.0.1:0",
			"--cluster-cidr", "10.252.0.0/16", "--node-cidr-mask-size", "24")
		return shared, err
	}))
}

// newNamespace creates a namespace labelled for one test (deleted at its
// end): policies bound with a namespaceSelector on the label see only it.
func newNamespace(t *testing.T, admin kubernetes.Interface, prefix string) *corev1.Namespace {
	t.Helper()
	ns, err := admin.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: map[string]string{"apipolicy-test": prefix}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns
}

// grantView binds the view ClusterRole to users (removed at the test's end).
func grantView(t *testing.T, admin kubernetes.Interface, name string, users ...string) {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	for _, u := range users {
		crb.Subjects = append(crb.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(context.Background(), crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// kubectl runs real kubectl with the admin kubeconfig: stdout, stderr, err.
func kubectl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return harness.Kubectl{Bin: harness.RequireKubectl(t), Args: []string{"--kubeconfig", shared.Kubeconfig()},
		Env: []string{"KUBECACHEDIR=" + t.TempDir()}, Timeout: 60 * time.Second}.Run(stdin, args...)
}
