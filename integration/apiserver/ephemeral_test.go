package apiserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// TestEphemeralContainers: pods/ephemeralcontainers as upstream's e2e and
// kubectl debug use it: a strategic merge patch adds a debugger (defaulted,
// generation bumped), GET returns the pod, an update appends another,
// removing or changing one is refused with upstream's message, the main
// resource refuses the change, and nothing else changes through it.
func TestEphemeralContainers(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "ephemeral-containers"
	admissionNamespace(t, cs, ns, nil)
	pods := cs.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, plainPod("target"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 1 {
		t.Fatalf("generation %d", pod.Generation)
	}

	// What e2e's AddEphemeralContainerSync sends.
	withEC := pod.DeepCopy()
	withEC.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", Command: []string{"/bin/sh", "-c", "sleep 1"}, Stdin: true, TTY: true}}}
	from, _ := json.Marshal(pod)
	to, _ := json.Marshal(withEC)
	patch, err := strategicpatch.CreateTwoWayMergePatch(from, to, pod)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := pods.Patch(ctx, "target", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	ec := patched.Spec.EphemeralContainers
	if len(ec) != 1 || ec[0].TerminationMessagePolicy != corev1.TerminationMessageReadFile || ec[0].ImagePullPolicy != corev1.PullAlways || patched.Generation != 2 {
		t.Fatalf("after patch: generation %d, ephemeral containers %+v", patched.Generation, ec)
	}

	got, err := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("target").SubResource("ephemeralcontainers").Do(ctx).Get()
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := got.(*corev1.Pod); !ok || len(p.Spec.EphemeralContainers) != 1 {
		t.Fatalf("GET ephemeralcontainers: %T %+v", got, got)
	}

	// Update through the subresource: append a second; other changes are dropped.
	upd := patched.DeepCopy()
	upd.Labels = map[string]string{"sneaky": "yes"}
	upd.Spec.Containers[0].Image = "changed"
	upd.Spec.EphemeralContainers = append(upd.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger2", Image: "agnhost", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}})
	two, err := pods.UpdateEphemeralContainers(ctx, "target", upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(two.Spec.EphemeralContainers) != 2 || two.Labels["sneaky"] != "" || two.Spec.Containers[0].Image != "busybox" || two.Generation != 3 {
		t.Fatalf("after update: generation %d labels %v image %q ephemeral %d", two.Generation, two.Labels, two.Spec.Containers[0].Image, len(two.Spec.EphemeralContainers))
	}

	removed := two.DeepCopy()
	removed.Spec.EphemeralContainers = removed.Spec.EphemeralContainers[:1]
	_, err = pods.UpdateEphemeralContainers(ctx, "target", removed, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.ephemeralContainers", `existing ephemeral containers "debugger2" may not be removed`)

	bad := two.DeepCopy()
	bad.Spec.EphemeralContainers = append(bad.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "withports", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}})
	_, err = pods.UpdateEphemeralContainers(ctx, "target", bad, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.ephemeralContainers[2].ports", "cannot be set for an Ephemeral Container")

	main := two.DeepCopy()
	main.Spec.EphemeralContainers = append(main.Spec.EphemeralContainers, bad.Spec.EphemeralContainers[2])
	main.Spec.EphemeralContainers[2].Ports = nil
	_, err = pods.Update(ctx, main, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec", "pod updates may not change fields other than")

	if _, err := pods.Patch(ctx, "missing", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers"); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing pod: %v", err)
	}

	// kubectl debug adds one the same way.
	out, errOut, err := shared.kubectl(t, "1.32", "", "-n", ns, "debug", "target", "--image=busybox", "-c", "kubectl-debugger", "--profile=general")
	if err != nil {
		t.Fatalf("kubectl debug: %v\n%s%s", err, out, errOut)
	}
	final, err := pods.Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range final.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "debugger,debugger2,kubectl-debugger" {
		t.Fatalf("ephemeral containers after kubectl debug: %v", names)
	}
}
