package serviceaccount

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
	"berth/internal/testpki"
)

const tokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// TestServiceAccounts shares one server and one agent between its steps.
func TestServiceAccounts(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{})
	ctx := context.Background()
	caPEM, err := os.ReadFile(filepath.Join(c.DataDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("kube-root-ca.crt is published in every namespace", func(t *testing.T) {
		c.MustKubectl(t, "", "create", "namespace", "fresh")
		for _, ns := range []string{"default", "kube-system", "fresh"} {
			harness.WaitFor(t, 60*time.Second, ns+"/kube-root-ca.crt", func() (bool, string) {
				cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return cm.Data["ca.crt"] == string(caPEM), fmt.Sprintf("data keys %v", slices.Sorted(maps.Keys(cm.Data)))
			})
		}
		// Deleted, it comes back.
		c.MustKubectl(t, "", "delete", "configmap", "kube-root-ca.crt", "-n", "fresh")
		harness.WaitFor(t, 60*time.Second, "fresh/kube-root-ca.crt restored", func() (bool, string) {
			cm, err := c.Client.CoreV1().ConfigMaps("fresh").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cm.Data["ca.crt"] == string(caPEM), ""
		})
	})

	t.Run("discovery lists serviceaccounts/token", func(t *testing.T) {
		res, err := c.Client.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.APIResources {
			if r.Name == "serviceaccounts/token" {
				if r.Kind != "TokenRequest" || r.Group != "authentication.k8s.io" || !slices.Contains(r.Verbs, "create") {
					t.Fatalf("serviceaccounts/token: %+v", r)
				}
				return
			}
		}
		t.Fatal("no serviceaccounts/token in /api/v1")
	})

	t.Run("TokenRequest refuses what upstream refuses", func(t *testing.T) {
		short := int64(60)
		_, err := c.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &short}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not specify a duration less than 10 minutes") {
			t.Errorf("60 s token: %v, want Invalid", err)
		}
		_, err = c.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "ghost", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("token for a missing service account: %v, want NotFound", err)
		}
		_, err = c.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "nowhere"},
		}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("token bound to a missing pod: %v, want NotFound", err)
		}
		tr, err := c.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Status.Token == "" {
			t.Fatal("no token")
		}
		if left := time.Until(tr.Status.ExpirationTimestamp.Time); left < 55*time.Minute || left > 61*time.Minute {
			t.Errorf("default token expires in %s, want about an hour", left)
		}
	})

	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: reader
  namespace: default
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`
	c.MustKubectl(t, fmt.Sprintf(pod, c.Env.BusyboxImage), "apply", "-f", "-")
	var reader *v1.Pod
	c.WaitPod(t, "reader", 120*time.Second, "pod reader Running", func(p *v1.Pod) (bool, string) {
		reader = p
		return p.Status.Phase == v1.PodRunning, fmt.Sprintf("phase %s, conditions %+v, statuses %+v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})

	t.Run("admission gave the pod its service account and token volume", func(t *testing.T) {
		if reader.Spec.ServiceAccountName != "default" {
			t.Errorf("serviceAccountName %q, want default", reader.Spec.ServiceAccountName)
		}
		var vol string
		for _, v := range reader.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
				vol = v.Name
			}
		}
		if vol == "" {
			t.Fatalf("no kube-api-access- projected volume in %+v", reader.Spec.Volumes)
		}
		mounts := reader.Spec.Containers[0].VolumeMounts
		if !slices.ContainsFunc(mounts, func(m v1.VolumeMount) bool { return m.Name == vol && m.MountPath == tokenDir && m.ReadOnly }) {
			t.Fatalf("container mounts %+v lack %s read-only at %s", mounts, vol, tokenDir)
		}
	})

	token := strings.TrimSpace(c.MustKubectl(t, "", "exec", "reader", "--", "cat", tokenDir+"/token"))
	t.Run("the volume holds ca.crt and namespace", func(t *testing.T) {
		if got := c.MustKubectl(t, "", "exec", "reader", "--", "cat", tokenDir+"/ca.crt"); got != string(caPEM) {
			t.Errorf("ca.crt in the pod differs from the cluster CA:\n%s", got)
		}
		if got := c.MustKubectl(t, "", "exec", "reader", "--", "cat", tokenDir+"/namespace"); got != "default" {
			t.Errorf("namespace file %q, want default", got)
		}
		_, _, err := c.Kubectl(t, "", "exec", "reader", "--", "sh", "-c", "echo x > "+tokenDir+"/token")
		if err == nil {
			t.Error("the token volume is writable inside the container")
		}
	})

	t.Run("the pod's token authenticates as its service account", func(t *testing.T) {
		out, errOut, err := tokenKubectl(t, c, token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil {
			t.Fatalf("kubectl --token auth whoami: %v\n%s", err, errOut)
		}
		if out != "system:serviceaccount:default:default" {
			t.Fatalf("whoami %q, want system:serviceaccount:default:default", out)
		}
		review, err := tokenClient(t, c, token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info := review.Status.UserInfo
		for _, g := range []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"} {
			if !slices.Contains(info.Groups, g) {
				t.Errorf("groups %v lack %s", info.Groups, g)
			}
		}
		if got := info.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != "reader" {
			t.Errorf("extra pod-name %v, want [reader]", got)
		}
		if got := info.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || types.UID(got[0]) != reader.UID {
			t.Errorf("extra pod-uid %v, want [%s]", got, reader.UID)
		}
		if got := info.Extra["authentication.kubernetes.io/node-name"]; len(got) != 1 || got[0] != c.Node {
			t.Errorf("extra node-name %v, want [%s]", got, c.Node)
		}
	})

	t.Run("kubectl create token", func(t *testing.T) {
		c.MustKubectl(t, "", "create", "serviceaccount", "builder")
		harness.WaitFor(t, 30*time.Second, "service account builder", func() (bool, string) {
			_, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "builder", metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
		tok := strings.TrimSpace(c.MustKubectl(t, "", "create", "token", "builder", "--duration", "10m"))
		out, errOut, err := tokenKubectl(t, c, tok, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil || out != "system:serviceaccount:default:builder" {
			t.Fatalf("whoami with builder's token: %q, %v\n%s", out, err, errOut)
		}
		// The pod runs as "default": binding a token of "builder" to it is refused.
		_, errOut, err = c.Kubectl(t, "", "create", "token", "builder", "--bound-object-kind", "Pod", "--bound-object-name", "reader")
		if err == nil || !strings.Contains(errOut, "pod running with different serviceaccount name") {
			t.Fatalf("token of builder bound to reader: err %v, stderr %q", err, errOut)
		}
	})

	t.Run("the token is refused once the pod is deleted", func(t *testing.T) {
		c.MustKubectl(t, "", "delete", "pod", "reader", "--wait=true", "--timeout=90s")
		harness.WaitFor(t, 30*time.Second, "pod reader gone", func() (bool, string) {
			_, err := c.Client.CoreV1().Pods("default").Get(ctx, "reader", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		_, err := tokenClient(t, c, token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Fatalf("whoami with the deleted pod's token: %v, want 401 Unauthorized", err)
		}
		_, errOut, err := tokenKubectl(t, c, token, "auth", "whoami")
		if err == nil || !strings.Contains(errOut, "Unauthorized") {
			t.Fatalf("kubectl --token auth whoami after deletion: err %v, stderr %q, want Unauthorized", err, errOut)
		}
	})

	t.Run("NodeRestriction keeps a node off other nodes", func(t *testing.T) {
		other := nodeClient(t, c, "intruder")
		_, err := other.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("node intruder registering itself: %v", err)
		}
		t.Cleanup(func() { _ = c.Client.CoreV1().Nodes().Delete(context.Background(), "intruder", metav1.DeleteOptions{}) })

		// Refused by the Node authorizer, or else by NodeRestriction
		// (upstream's RBAC lets nodes patch nodes and leaves it to the plugin).
		patch := []byte(`{"metadata":{"labels":{"team":"red"}}}`)
		_, err = other.CoreV1().Nodes().Patch(ctx, c.Node, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("intruder labelling %s: %v, want 403", c.Node, err)
		}
		n, err := c.Client.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := n.Labels["team"]; ok {
			t.Fatalf("%s got the label anyway: %v", c.Node, n.Labels)
		}

		restricted := []byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/tier":"gold"}}}`)
		_, err = other.CoreV1().Nodes().Patch(ctx, "intruder", types.StrategicMergePatchType, restricted, metav1.PatchOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "node-restriction.kubernetes.io/tier") {
			t.Fatalf("intruder setting a node-restriction label on itself: %v, want 403", err)
		}
		own := []byte(`{"metadata":{"labels":{"team":"red","topology.kubernetes.io/zone":"z1"}}}`)
		if _, err := other.CoreV1().Nodes().Patch(ctx, "intruder", types.StrategicMergePatchType, own, metav1.PatchOptions{}); err != nil {
			t.Fatalf("intruder setting allowed labels on itself: %v", err)
		}
	})
}

// tokenKubectl runs kubectl with only the server, the CA and a bearer token.
func tokenKubectl(t *testing.T, c *harness.Cluster, token string, args ...string) (string, string, error) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return harness.Kubectl{Bin: harness.RequireKubectl(t), Timeout: 60 * time.Second, Env: []string{"KUBECACHEDIR=" + t.TempDir()},
		Args: []string{"--kubeconfig", empty, "--server", "https://" + c.Addr,
			"--certificate-authority", filepath.Join(c.DataDir, "ca.crt"), "--token", token}}.Run("", args...)
}

// tokenClient is a clientset authenticating with a bearer token only.
func tokenClient(t *testing.T, c *harness.Cluster, token string) kubernetes.Interface {
	t.Helper()
	cfg := &rest.Config{Host: c.Config.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData, CAFile: c.Config.CAFile}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// nodeClient is a clientset with a client certificate for system:node:NAME
// (group system:nodes), signed with the cluster CA in the server's data dir.
func nodeClient(t *testing.T, c *harness.Cluster, name string) kubernetes.Interface {
	t.Helper()
	certPEM, keyPEM := testpki.LoadCA(t, c.DataDir).ClientPEM(t, "system:node:"+name, "system:nodes")
	cfg := &rest.Config{Host: c.Config.Host, TLSClientConfig: rest.TLSClientConfig{
		CAData: c.Config.CAData, CAFile: c.Config.CAFile,
		CertData: certPEM, KeyData: keyPEM,
	}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
