package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: LABEL}
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: ["sleep", "3600"]
`

const deploymentManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: busybox:1.36
`

// TestKubectl walks the everyday kubectl flows with the oldest and the two
// newest kubectl releases hack/kubectl builds, and 1.32 (the harness's).
func TestKubectl(t *testing.T) {
	for _, version := range []string{"1.32", "1.33", "1.34", "1.27"} {
		t.Run(version, func(t *testing.T) {
			requireKubectl(t, version)
			ns := newNamespace(t, shared)
			k := func(stdin string, args ...string) string {
				t.Helper()
				return shared.mustKubectl(t, version, stdin, append([]string{"-n", ns}, args...)...)
			}
			getPod := func() corev1.Pod {
				t.Helper()
				var pod corev1.Pod
				if err := json.Unmarshal([]byte(k("", "get", "pod", "web", "-o", "json")), &pod); err != nil {
					t.Fatalf("get -o json: %v", err)
				}
				return pod
			}

			// apply creates, re-apply of a changed file updates.
			if out := k(strings.Replace(podManifest, "LABEL", "one", 1), "apply", "-f", "-"); !strings.Contains(out, "pod/web created") {
				t.Fatalf("apply: %q", out)
			}
			pod := getPod()
			if pod.Labels["app"] != "one" || pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Spec.DNSPolicy != corev1.DNSClusterFirst {
				t.Fatalf("created pod: labels %v restartPolicy %q dnsPolicy %q (defaults expected)", pod.Labels, pod.Spec.RestartPolicy, pod.Spec.DNSPolicy)
			}
			if pod.UID == "" || pod.CreationTimestamp.IsZero() || pod.ResourceVersion == "" {
				t.Fatalf("created pod lacks uid/creationTimestamp/resourceVersion: %+v", pod.ObjectMeta)
			}
			if out := k(strings.Replace(podManifest, "LABEL", "two", 1), "apply", "-f", "-"); !strings.Contains(out, "pod/web configured") {
				t.Fatalf("re-apply: %q", out)
			}
			if got := getPod().Labels["app"]; got != "two" {
				t.Fatalf("after re-apply label app=%q, want two", got)
			}

			// get -o yaml / wide, describe.
			if out := k("", "get", "pod", "web", "-o", "yaml"); !strings.Contains(out, "name: web") || !strings.Contains(out, "kind: Pod") {
				t.Fatalf("get -o yaml: %s", out)
			}
			if out := k("", "get", "pods", "-o", "wide", "--show-labels"); !strings.Contains(out, "web") || !strings.Contains(out, "app=two") {
				t.Fatalf("get -o wide --show-labels: %s", out)
			}
			if out := k("", "describe", "pod", "web"); !strings.Contains(out, "Name:") || !strings.Contains(out, "busybox:1.36") {
				t.Fatalf("describe: %s", out)
			}

			// label, annotate, patch of three kinds.
			k("", "label", "pod", "web", "tier=front")
			k("", "annotate", "pod", "web", "note=hello")
			k("", "patch", "pod", "web", "-p", `{"spec":{"activeDeadlineSeconds":600}}`)
			k("", "patch", "pod", "web", "--type=merge", "-p", `{"metadata":{"labels":{"merged":"yes"}}}`)
			k("", "patch", "pod", "web", "--type=json", "-p", `[{"op":"add","path":"/metadata/labels/json","value":"yes"}]`)
			pod = getPod()
			if pod.Labels["tier"] != "front" || pod.Annotations["note"] != "hello" || pod.Labels["merged"] != "yes" || pod.Labels["json"] != "yes" {
				t.Fatalf("after label/annotate/patch: labels %v annotations %v", pod.Labels, pod.Annotations)
			}
			if pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds != 600 {
				t.Fatalf("strategic patch not applied: activeDeadlineSeconds %v", pod.Spec.ActiveDeadlineSeconds)
			}

			// edit, with an editor that changes a label (edit sends a patch).
			editor := []string{"KUBE_EDITOR=sed -i -e s/front$/edited/"}
			if out, errOut, err := shared.kubectlEnv(t, version, editor, "", "-n", ns, "edit", "pod", "web"); err != nil {
				t.Fatalf("edit: %v\n%s%s", err, out, errOut)
			}
			if got := getPod().Labels["tier"]; got != "edited" {
				t.Fatalf("after edit: tier=%q, want edited", got)
			}

			// Unknown fields with --validate=warn: created, with a warning.
			warnCM := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: warned\nbogus: 1\n"
			_, errOut, err := shared.kubectl(t, version, warnCM, "-n", ns, "apply", "--validate=warn", "-f", "-")
			if err != nil || !strings.Contains(errOut, `unknown field "bogus"`) {
				t.Fatalf("apply --validate=warn: err %v stderr %q, want a warning naming the field", err, errOut)
			}

			// Deployments: apply, scale (the /scale subresource), generation.
			k(deploymentManifest, "apply", "-f", "-")
			k("", "scale", "deployment", "web", "--replicas=5")
			var d appsv1.Deployment
			if err := json.Unmarshal([]byte(k("", "get", "deployment", "web", "-o", "json")), &d); err != nil {
				t.Fatal(err)
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 5 || d.Generation != 2 {
				t.Fatalf("after scale: replicas %v generation %d, want 5 and 2", d.Spec.Replicas, d.Generation)
			}

			// --dry-run=server changes nothing.
			out := k("", "create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server", "-o", "name")
			if !strings.Contains(out, "configmap/dry") {
				t.Fatalf("dry-run create output: %q", out)
			}
			if _, errOut, err := shared.kubectl(t, version, "", "-n", ns, "get", "configmap", "dry"); err == nil || !strings.Contains(errOut, "NotFound") && !strings.Contains(errOut, "not found") {
				t.Fatalf("dry-run created the configmap (err %v, stderr %s)", err, errOut)
			}
			k("", "scale", "deployment", "web", "--replicas=1", "--dry-run=server")
			if out := k("", "get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"); out != "5" {
				t.Fatalf("dry-run scale changed replicas to %s", out)
			}

			// Invalid manifests: unknown fields (strict validation), then
			// field errors as a 422 with the field paths.
			bad := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n  - name: c\n    image: busybox\n    ports: [{containerPort: 70000}]\n    bogus: 1\n"
			_, errOut, err = shared.kubectl(t, version, bad, "-n", ns, "apply", "-f", "-")
			if err == nil || !strings.Contains(errOut, `unknown field "spec.containers[0].bogus"`) {
				t.Fatalf("unknown field not rejected: err %v stderr %s", err, errOut)
			}
			_, errOut, err = shared.kubectl(t, version, bad, "-n", ns, "apply", "--validate=false", "-f", "-")
			if err == nil || !strings.Contains(errOut, `The Pod "Bad_Name" is invalid`) ||
				!strings.Contains(errOut, "metadata.name: Invalid value") ||
				!strings.Contains(errOut, "spec.containers[0].ports[0].containerPort: Invalid value: 70000") {
				t.Fatalf("invalid pod not rejected as upstream does: err %v stderr %s", err, errOut)
			}

			// explain reads the OpenAPI documents.
			if out := k("", "explain", "pod.spec.restartPolicy"); !strings.Contains(out, "restartPolicy") {
				t.Fatalf("explain: %s", out)
			}

			// delete.
			if out := k("", "delete", "pod", "web"); !strings.Contains(out, `pod "web" deleted`) {
				t.Fatalf("delete: %q", out)
			}
			if _, errOut, err := shared.kubectl(t, version, "", "-n", ns, "get", "pod", "web"); err == nil || !strings.Contains(errOut, "NotFound") {
				t.Fatalf("pod still there after delete: err %v stderr %s", err, errOut)
			}
		})
	}
}
