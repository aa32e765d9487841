package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
)

var nodeClientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}

// tokenClient is a client presenting the agent join token.
func tokenClient(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(shared.Dir, "agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: "https://" + shared.Addr, BearerToken: strings.TrimSpace(string(token)),
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(shared.Dir, "ca.crt")}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// requestCert creates a CSR with client for subject (and SANs) and waits
// for its certificate, returning the certificate and key PEM.
func requestCert(t *testing.T, client kubernetes.Interface, signer string, usages []certificatesv1.KeyUsage, subject pkix.Name, dns []string, ips []net.IP, d time.Duration) ([]byte, []byte, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, err := certutil.MakeCSR(key, &subject, dns, ips)
	if err != nil {
		t.Fatal(err)
	}
	name, uid, err := csr.RequestCertificate(client, csrPEM, "", signer, &d, usages, key)
	if err != nil {
		t.Fatalf("create CSR: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	certPEM, err := csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		got, _ := shared.Client(t).CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		t.Fatalf("CSR %s: no certificate: %v (status %+v)", name, err, got.Status)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), name
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("certificate is not PEM: %q", certPEM)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNodeCertificateBootstrap is kubelet TLS bootstrap against berth: the
// join token gets a client certificate for system:node:test-node, which
// authenticates as that node (user and group), renews itself, and gets a
// serving certificate for the node's own addresses once the Node exists.
func TestNodeCertificateBootstrap(t *testing.T) {
	ctx := context.Background()
	admin := shared.Client(t)
	nodeSubject := pkix.Name{CommonName: "system:node:test-node", Organization: []string{"system:nodes"}}

	certPEM, keyPEM, name := requestCert(t, tokenClient(t), certificatesv1.KubeAPIServerClientKubeletSignerName, nodeClientUsages, nodeSubject, nil, nil, 15*time.Minute)
	first, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.Spec.Username, "system:bootstrap:") || !slices.Contains(first.Spec.Groups, "system:bootstrappers") {
		t.Errorf("bootstrap CSR requester = %q %v, want the join-token identity", first.Spec.Username, first.Spec.Groups)
	}
	if len(first.Status.Conditions) == 0 || first.Status.Conditions[0].Type != certificatesv1.CertificateApproved || first.Status.Conditions[0].Reason != "AutoApproved" {
		t.Errorf("bootstrap CSR conditions = %+v, want Approved/AutoApproved", first.Status.Conditions)
	}
	cert := parseCert(t, certPEM)
	if cert.Subject.CommonName != "system:node:test-node" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject = %v", cert.Subject)
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("ext key usages = %v, want client auth", cert.ExtKeyUsage)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life < 15*time.Minute || life > 21*time.Minute {
		t.Errorf("lifetime %v, want the requested 15m (plus the 5m backdate)", life)
	}

	// The certificate authenticates as the node: a CSR it creates records
	// user system:node:test-node in group system:nodes, and is approved as
	// a renewal.
	nodeCfg := &rest.Config{Host: "https://" + shared.Addr,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(shared.Dir, "ca.crt"), CertData: certPEM, KeyData: keyPEM}}
	nodeClient, err := kubernetes.NewForConfig(nodeCfg)
	if err != nil {
		t.Fatal(err)
	}
	// kubectl auth whoami (SelfSubjectReview) with the node credential.
	kubeconfig := filepath.Join(t.TempDir(), "node.kubeconfig")
	writeKubeconfig(t, kubeconfig, certPEM, keyPEM)
	who := shared.mustKubectl(t, "1.32", "", "--kubeconfig", kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	if !strings.HasPrefix(who, "system:node:test-node ") || !strings.Contains(who, `"system:nodes"`) {
		t.Errorf("kubectl auth whoami with the node certificate = %q, want system:node:test-node in system:nodes", who)
	}

	// SelfSubjectReview is create-only: nothing is stored to list.
	err = admin.AuthenticationV1().RESTClient().Get().AbsPath("/apis/authentication.k8s.io/v1/selfsubjectreviews").Do(ctx).Error()
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("GET selfsubjectreviews: %v, want 405 MethodNotSupported", err)
	}
	if who := shared.mustKubectl(t, "1.32", "", "auth", "whoami"); !strings.Contains(who, "kubernetes-admin") || !strings.Contains(who, "system:masters") {
		t.Errorf("kubectl auth whoami as admin:\n%s", who)
	}

	renewedPEM, _, renewName := requestCert(t, nodeClient, certificatesv1.KubeAPIServerClientKubeletSignerName, nodeClientUsages, nodeSubject, nil, nil, time.Hour)
	renewal, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, renewName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if renewal.Spec.Username != "system:node:test-node" || !slices.Contains(renewal.Spec.Groups, "system:nodes") {
		t.Fatalf("node certificate authenticated as %q %v, want system:node:test-node in system:nodes", renewal.Spec.Username, renewal.Spec.Groups)
	}
	if c := parseCert(t, renewedPEM); c.Subject.CommonName != "system:node:test-node" {
		t.Errorf("renewed subject = %v", c.Subject)
	}

	// Another node's client certificate is not approved for this node.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherPEM, _ := certutil.MakeCSR(key, &pkix.Name{CommonName: "system:node:other-node", Organization: []string{"system:nodes"}}, nil, nil)
	otherName, _, err := csr.RequestCertificate(nodeClient, otherPEM, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, nodeClientUsages, key)
	if err != nil {
		t.Fatal(err)
	}

	// A serving certificate for the node's own name and address, issued
	// once its Node lists the address.
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "test-node"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), "test-node", metav1.DeleteOptions{}) })
	node, err := admin.CoreV1().Nodes().Get(ctx, "test-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: "test-node"}}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	servingUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	servingPEM, _, _ := requestCert(t, nodeClient, certificatesv1.KubeletServingSignerName, servingUsages, nodeSubject,
		[]string{"test-node"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	serving := parseCert(t, servingPEM)
	if !slices.Contains(serving.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Equal(serving.DNSNames, []string{"test-node"}) || len(serving.IPAddresses) != 1 {
		t.Errorf("serving certificate: usages %v, DNS %v, IPs %v", serving.ExtKeyUsage, serving.DNSNames, serving.IPAddresses)
	}

	other, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, otherName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Status.Conditions) != 0 || len(other.Status.Certificate) != 0 {
		t.Errorf("test-node's request for other-node's certificate: %+v, want pending", other.Status)
	}
	// kubectl shows it Pending, and a person may approve it.
	out := shared.mustKubectl(t, "1.32", "", "get", "csr", otherName)
	if !strings.Contains(out, "REQUESTOR") || !strings.Contains(out, "system:node:test-node") || !strings.Contains(out, "Pending") {
		t.Errorf("kubectl get csr:\n%s", out)
	}
	shared.mustKubectl(t, "1.32", "", "certificate", "approve", otherName)
	poll(t, "other-node's CSR signed after kubectl certificate approve", func() bool {
		c, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, otherName, metav1.GetOptions{})
		return err == nil && len(c.Status.Certificate) > 0
	})
	out = shared.mustKubectl(t, "1.32", "", "get", "csr", otherName)
	if !strings.Contains(out, "Approved,Issued") {
		t.Errorf("kubectl get csr after approval:\n%s", out)
	}
	for _, n := range []string{name, renewName, otherName} {
		_ = admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, n, metav1.DeleteOptions{})
	}
}

// TestPolicyResourcesWithKubectl applies a LimitRange, a ResourceQuota and
// both webhook configurations and reads them back with kubectl get;
// invalid ones are rejected with upstream's messages.
func TestPolicyResourcesWithKubectl(t *testing.T) {
	ns := newNamespace(t, shared)
	manifest := `apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits:
  - type: Container
    max: {cpu: "2"}
    min: {cpu: 100m}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: quota}
spec:
  hard: {pods: "2", requests.cpu: "1"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: ` + ns + `-inject}
webhooks:
- name: inject.sidecar.berth.dev
  clientConfig: {url: "https://127.0.0.1:9443/mutate"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: ` + ns + `-check}
webhooks:
- name: check.sidecar.berth.dev
  clientConfig: {service: {name: checker, namespace: default}}
  sideEffects: None
  admissionReviewVersions: [v1]
`
	t.Cleanup(func() {
		_, _, _ = shared.kubectl(t, "1.32", "", "delete", "mutatingwebhookconfigurations", ns+"-inject")
		_, _, _ = shared.kubectl(t, "1.32", "", "delete", "validatingwebhookconfigurations", ns+"-check")
	})
	shared.mustKubectl(t, "1.32", manifest, "apply", "-n", ns, "-f", "-")

	out := shared.mustKubectl(t, "1.32", "", "get", "-n", ns, "limitranges,resourcequotas")
	for _, want := range []string{"limitrange/limits", "CREATED AT", "resourcequota/quota", "REQUEST", "LIMIT"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get limitranges,resourcequotas: no %q in\n%s", want, out)
		}
	}
	// The LimitRange defaults: default and defaultRequest from max and min.
	lr := shared.mustKubectl(t, "1.27", "", "get", "-n", ns, "limits", "limits", "-o", "jsonpath={.spec.limits[0].default.cpu} {.spec.limits[0].defaultRequest.cpu}")
	if lr != "2 2" {
		t.Errorf("limitrange defaults = %q, want default and defaultRequest cpu 2 (from max)", lr)
	}
	out = shared.mustKubectl(t, "1.32", "", "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations")
	for _, want := range []string{ns + "-inject", ns + "-check", "WEBHOOKS"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get webhook configurations: no %q in\n%s", want, out)
		}
	}
	// Webhook defaults as upstream.
	wh := shared.mustKubectl(t, "1.32", "", "get", "mutatingwebhookconfigurations", ns+"-inject", "-o",
		"jsonpath={.webhooks[0].failurePolicy} {.webhooks[0].timeoutSeconds} {.webhooks[0].matchPolicy} {.webhooks[0].reinvocationPolicy} {.webhooks[0].rules[0].scope}")
	if wh != "Fail 10 Equivalent Never *" {
		t.Errorf("webhook defaults = %q", wh)
	}
	out = shared.mustKubectl(t, "1.32", "", "get", "csr")
	if !strings.Contains(out, "SIGNERNAME") && !strings.Contains(out, "No resources found") {
		t.Errorf("kubectl get csr:\n%s", out)
	}

	for _, bad := range []struct{ manifest, want string }{
		{`apiVersion: v1
kind: LimitRange
metadata: {name: bad}
spec: {limits: [{type: Container, max: {cpu: 100m}, min: {cpu: "1"}}]}`, "min value 1 is greater than max value 100m"},
		{`apiVersion: v1
kind: ResourceQuota
metadata: {name: bad}
spec: {hard: {widgets: "1"}}`, "must be a standard resource for quota"},
		{`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: ` + ns + `-bad}
webhooks:
- name: short.name
  clientConfig: {url: "http://127.0.0.1/x"}
  sideEffects: Some
  timeoutSeconds: 60
  admissionReviewVersions: [v1]`, "should be a domain with at least three segments separated by dots"},
	} {
		_, errOut, err := shared.kubectl(t, "1.32", bad.manifest, "create", "-n", ns, "-f", "-")
		if err == nil || !strings.Contains(errOut, bad.want) {
			t.Errorf("invalid manifest accepted or wrong message (err %v):\n%s\nwant %q", err, errOut, bad.want)
		}
	}
}

// writeKubeconfig writes a kubeconfig for the shared server with a client
// certificate.
func writeKubeconfig(t *testing.T, path string, certPEM, keyPEM []byte) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["berth"] = &clientcmdapi.Cluster{Server: "https://" + shared.Addr, CertificateAuthority: filepath.Join(shared.Dir, "ca.crt")}
	cfg.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["node"] = &clientcmdapi.Context{Cluster: "berth", AuthInfo: "node"}
	cfg.CurrentContext = "node"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}
