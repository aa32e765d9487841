package openapi

import (
	"berth/internal/prereq"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// kubectlBinary is one kubectl release to run against the documents.
type kubectlBinary struct{ name, path string }

// kubectlReleases are the releases run against the documents, oldest
// first: every one hack/kubectl builds.
var kubectlReleases = []string{"1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34"}

// requireKubectl is the kubectl of a release (prereq.Kubectl: a missing one
// fails the test under CI=true, else skips it).
func requireKubectl(t *testing.T, release string) kubectlBinary {
	t.Helper()
	return kubectlBinary{name: release, path: prereq.Kubectl(t, release)}
}

// runKubectl runs kubectl against server with a private cache and no
// kubeconfig, and returns its combined output.
func runKubectl(t *testing.T, k kubectlBinary, server string, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := append([]string{"--server=" + server, "--cache-dir=" + filepath.Join(dir, "cache")}, args...)
	cmd := exec.CommandContext(ctx, k.path, full...)
	cmd.Env = []string{"HOME=" + dir, "KUBECONFIG=" + filepath.Join(dir, "kubeconfig"), "PATH=/usr/bin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func newDefaultDocuments(t testing.TB) *Documents {
	t.Helper()
	docs, err := New(DefaultResources(), Info{Version: "v1.37.2"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return docs
}

// assertContains checks that out contains each want, comparing with runs of
// white space (kubectl wraps descriptions) collapsed to one space.
func assertContains(t *testing.T, out string, wants ...string) {
	t.Helper()
	collapse := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, want := range wants {
		if !strings.Contains(collapse(out), collapse(want)) {
			t.Errorf("output lacks %q; output:\n%s", want, out)
		}
	}
}

// TestKubectlExplain runs kubectl explain of every release against the
// documents: the default (OpenAPI v3) renderer on a core and a grouped
// resource, and the OpenAPI v2 renderer (protobuf document).
func TestKubectlExplain(t *testing.T) {
	docs := newDefaultDocuments(t)
	resources := DefaultResources()
	srv, _ := startTestAPI(t, docs, resources)
	for _, release := range kubectlReleases {
		t.Run(release, func(t *testing.T) {
			k := requireKubectl(t, release)
			out, err := runKubectl(t, k, srv.URL, "explain", "pods.spec.containers")
			if err != nil {
				t.Fatalf("kubectl explain pods.spec.containers: %v\n%s", err, out)
			}
			assertContains(t, out,
				"KIND:       Pod", "VERSION:    v1",
				"FIELD: containers <[]Container>",
				"List of containers belonging to the pod.",
				"name\t<string> -required-",
				"image\t<string>",
				"resources\t<ResourceRequirements>",
				"ports\t<[]ContainerPort>",
				"Compute Resources required by this container.")

			out, err = runKubectl(t, k, srv.URL, "explain", "deployments.spec.strategy.rollingUpdate.maxSurge")
			if err != nil {
				t.Fatalf("kubectl explain deployments…maxSurge: %v\n%s", err, out)
			}
			assertContains(t, out, "GROUP:      apps", "KIND:       Deployment", "FIELD: maxSurge <IntOrString>",
				"The maximum number of pods that can be scheduled above the desired number of pods.")

			out, err = runKubectl(t, k, srv.URL, "explain", "clusterrolebindings.roleRef")
			if err != nil {
				t.Fatalf("kubectl explain clusterrolebindings.roleRef: %v\n%s", err, out)
			}
			assertContains(t, out, "GROUP:      rbac.authorization.k8s.io", "KIND:       ClusterRoleBinding",
				"apiGroup\t<string>", "kind\t<string> -required-", "name\t<string> -required-")
			if strings.Contains(out, "apiGroup\t<string> -required-") {
				t.Errorf("roleRef.apiGroup is shown required; upstream marks it +optional:\n%s", out)
			}

			out, err = runKubectl(t, k, srv.URL, "explain", "pods.spec.containers", "--output=plaintext-openapiv2")
			if err != nil {
				t.Fatalf("kubectl explain --output=plaintext-openapiv2: %v\n%s", err, out)
			}
			assertContains(t, out, "KIND:", "Pod", "List of containers belonging to the pod.", "name\t<string> -required-")
		})
	}
}

// TestKubectlExplainEveryResource explains every served resource with the
// oldest kubectl, whose template is the fussiest about paths: it finds a kind
// only through the GET of its cluster-wide list path. A resource served
// without list (SelfSubjectReview, create only) has no such GET, and kubectl
// 1.27.3 (the newest 1.27 the module proxy serves) fails on it against any
// server, upstream's too ("index of nil pointer" in its template); 1.28 also
// reads the kind from the other operations (POST, …), so those are explained
// with 1.28.
func TestKubectlExplainEveryResource(t *testing.T) {
	oldest := requireKubectl(t, kubectlReleases[0])
	noList := requireKubectl(t, kubectlReleases[1])
	resources := DefaultResources()
	srv, _ := startTestAPI(t, newDefaultDocuments(t), resources)
	for _, r := range resources {
		k := oldest
		if !slices.Contains(r.Verbs, VerbList) {
			k = noList
		}
		gv := r.GVK.GroupVersion()
		out, err := runKubectl(t, k, srv.URL, "explain", r.Resource, "--api-version="+gv.String())
		if err != nil {
			t.Errorf("kubectl %s explain %s --api-version=%s: %v\n%s", k.name, r.Resource, gv, err, out)
			continue
		}
		want := []string{"KIND:       " + r.GVK.Kind, "VERSION:    " + gv.Version, "DESCRIPTION:", "FIELDS:", "metadata\t<ObjectMeta>"}
		if gv.Group != "" {
			want = append(want, "GROUP:      "+gv.Group)
		}
		assertContains(t, out, want...)
	}
}

// TestKubectlApplyUsesServerSideValidation runs kubectl apply twice: the
// create must carry fieldValidation=Strict (kubectl found the parameter in
// the documents, so it left validation to the server), and the re-apply must
// send a strategic merge patch keyed by container name (kubectl read the
// patch strategy and merge key from the documents).
func TestKubectlApplyUsesServerSideValidation(t *testing.T) {
	docs := newDefaultDocuments(t)
	for _, release := range kubectlReleases {
		t.Run(release, func(t *testing.T) {
			k := requireKubectl(t, release)
			srv, api := startTestAPI(t, docs, DefaultResources())
			dir := t.TempDir()
			manifest := filepath.Join(dir, "pod.yaml")
			write := func(image string) {
				pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: demo\n  namespace: default\nspec:\n  containers:\n  - name: app\n    image: " + image + "\n  - name: side\n    image: busybox\n"
				if err := os.WriteFile(manifest, []byte(pod), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("busybox:1")
			out, err := runKubectl(t, k, srv.URL, "apply", "--validate=strict", "-f", manifest)
			if err != nil {
				t.Fatalf("kubectl apply: %v\n%s", err, out)
			}
			assertContains(t, out, "pod/demo created")
			creates := api.recorded("POST", testPodsPath)
			if len(creates) != 1 {
				t.Fatalf("got %d POSTs to %s, want 1", len(creates), testPodsPath)
			}
			if !strings.Contains(creates[0].RawQuery, "fieldValidation=Strict") {
				t.Errorf("create query %q lacks fieldValidation=Strict: kubectl did not find the parameter in the OpenAPI documents", creates[0].RawQuery)
			}

			write("busybox:2")
			out, err = runKubectl(t, k, srv.URL, "apply", "--validate=strict", "-f", manifest)
			if err != nil {
				t.Fatalf("kubectl apply (changed): %v\n%s", err, out)
			}
			assertContains(t, out, "pod/demo configured")
			patches := api.recorded("PATCH", testPodsPath+"/demo")
			if len(patches) != 1 {
				t.Fatalf("got %d PATCHes, want 1", len(patches))
			}
			p := patches[0]
			if p.ContentType != "application/strategic-merge-patch+json" {
				t.Errorf("patch content type %q, want application/strategic-merge-patch+json", p.ContentType)
			}
			if !strings.Contains(p.RawQuery, "fieldValidation=Strict") {
				t.Errorf("patch query %q lacks fieldValidation=Strict", p.RawQuery)
			}
			body := string(p.Body)
			assertContains(t, body, `"$setElementOrder/containers":[{"name":"app"},{"name":"side"}]`,
				`"containers":[{"image":"busybox:2","name":"app"}]`)
		})
	}
}

// TestKubectlClientSideValidation serves the documents without the
// fieldValidation parameter, as an older server would, so kubectl validates
// manifests itself against the schemas: a valid pod and deployment (quantities,
// int-or-string, integers, maps) must pass, and an unknown field, a missing
// required field and a wrongly typed field must each be reported.
func TestKubectlClientSideValidation(t *testing.T) {
	b, err := build(DefaultResources(), Info{Version: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range b.swagger.Paths.Paths {
		for _, op := range []*spec.Operation{item.Post, item.Put, item.Patch} {
			if op == nil {
				continue
			}
			op.Parameters = slices.DeleteFunc(op.Parameters, func(p spec.Parameter) bool { return p.Name == "fieldValidation" })
		}
		b.swagger.Paths.Paths[path] = item
	}
	docs, err := encode(b.swagger, b.oneOf)
	if err != nil {
		t.Fatal(err)
	}
	srv, api := startTestAPI(t, docs, DefaultResources())
	dir := t.TempDir()
	valid := filepath.Join(dir, "valid.yaml")
	invalid := filepath.Join(dir, "invalid.yaml")
	manifests := map[string]string{
		valid: `apiVersion: v1
kind: Pod
metadata:
  name: ok
  labels: {app: demo}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox
    command: ["sleep", "3600"]
    ports: [{containerPort: 8080, protocol: TCP}]
    resources:
      limits: {cpu: 100m, memory: 64Mi}
      requests: {cpu: 0.1, memory: "67108864"}
    readinessProbe:
      httpGet: {path: /, port: http}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ok
spec:
  replicas: 2
  selector: {matchLabels: {app: demo}}
  strategy:
    rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}
  template:
    metadata: {labels: {app: demo}}
    spec:
      containers: [{name: app, image: busybox}]
`,
		invalid: `apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  terminationGracePeriodSeconds: soon
  containers:
  - name: app
    image: busybox
    imagePullPolicyy: Always
  - image: busybox
`,
	}
	for path, content := range manifests {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, release := range kubectlReleases {
		t.Run(release, func(t *testing.T) {
			k := requireKubectl(t, release)
			out, err := runKubectl(t, k, srv.URL, "create", "--dry-run=client", "--validate=strict", "-f", valid)
			if err != nil {
				t.Fatalf("valid manifest rejected: %v\n%s", err, out)
			}
			assertContains(t, out, "pod/ok created (dry run)", "deployment.apps/ok created (dry run)")
			out, err = runKubectl(t, k, srv.URL, "create", "--dry-run=client", "--validate=strict", "-f", invalid)
			if err == nil {
				t.Fatalf("manifest with an unknown field accepted:\n%s", out)
			}
			assertContains(t, out, `unknown field "imagePullPolicyy" in io.k8s.api.core.v1.Container`,
				`missing required field "name" in io.k8s.api.core.v1.Container`,
				`io.k8s.api.core.v1.PodSpec.terminationGracePeriodSeconds: got "string", expected "integer"`)
		})
	}
	// kubectl fetched the schemas it validated against.
	if len(api.recorded("GET", PathV2))+len(api.recorded("GET", PathV3+"/api/v1")) == 0 {
		t.Error("kubectl fetched no OpenAPI document")
	}
}
