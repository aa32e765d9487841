package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/authentication"
	"berth/integration/harness"
	"berth/integration/nodeenv"
)

// TestAgentStopsWithoutANodeCertificate: an agent whose node client
// certificate request is denied, or whose join token has expired, exits
// with the reason instead of running on the join token.
func TestAgentStopsWithoutANodeCertificate(t *testing.T) {
	c := harness.StartServer(t, harness.ServerOptions{})
	ctx := context.Background()
	env := nodeenv.Current()
	// No auto-approval: the test decides the node's CSR.
	if err := c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, "berth:node-autoapprove-bootstrap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("CSR denied", func(t *testing.T) {
		dir := t.TempDir()
		agent, _ := c.StartAgent(t, env, "denied-node", filepath.Join(dir, "agent"), "/berth-denied-node")
		var name string
		harness.WaitFor(t, 60*time.Second, "the agent's CSR", func() (bool, string) {
			list, err := c.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, csr := range list.Items {
				if csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && len(csr.Status.Conditions) == 0 {
					name = csr.Name
					return true, ""
				}
			}
			return false, agent.LogTail()
		})
		csr, err := c.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "UnknownMachine", Message: "not in the inventory"})
		if _, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitExit(t, agent, "UnknownMachine")
		if _, err := c.Client.CoreV1().Nodes().Get(ctx, "denied-node", metav1.GetOptions{}); err == nil {
			t.Fatal("the agent registered its Node on the join token")
		}
	})

	t.Run("join token expired", func(t *testing.T) {
		dir := t.TempDir()
		token, err := authentication.GenerateBootstrapToken()
		if err != nil {
			t.Fatal(err)
		}
		secret, err := authentication.BootstrapTokenSecret(token, "expired", time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tokenFile := filepath.Join(dir, "token")
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		agent, _ := c.StartAgent(t, env, "expired-node", filepath.Join(dir, "agent"), "/berth-expired-node", "--token-file", tokenFile)
		waitExit(t, agent, "Unauthorized")
	})
}

// waitExit waits for the process to exit with reason in its log.
func waitExit(t *testing.T, p *harness.Proc, reason string) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(90 * time.Second):
		t.Fatalf("the agent still runs:\n%s", p.LogTail())
	}
	if log := p.Log(); !strings.Contains(log, "no node client certificate") || !strings.Contains(log, reason) {
		t.Fatalf("the agent exited without saying %q:\n%s", reason, p.LogTail())
	}
}
