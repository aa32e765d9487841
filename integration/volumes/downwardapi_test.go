package volumes_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// formatMap is how the downward API renders labels and annotations:
// key="value" lines sorted by key.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// A downwardAPI volume has the pod's metadata (fieldRef) and a container's
// resources divided by the divisor, rounded up (resourceFieldRef); a label
// changed on the running pod reaches the file within the resync period.
func TestDownwardAPIVolume(t *testing.T) {
	ns := newNamespace(t)
	pod := runPod(t, ns, `
metadata:
  name: downward
  labels: {app: web, tier: front}
  annotations: {note: hello, "example.com/multi": "a b"}
spec:
  volumes:
  - name: info
    downwardAPI:
      defaultMode: 0444
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: namespace, fieldRef: {fieldPath: metadata.namespace}}
      - {path: uid, fieldRef: {fieldPath: metadata.uid}}
      - {path: app, fieldRef: {fieldPath: "metadata.labels['app']"}, mode: 0400}
      - {path: res/mem_limit_mi, resourceFieldRef: {containerName: c, resource: limits.memory, divisor: 1Mi}}
      - {path: res/cpu_request_m, resourceFieldRef: {containerName: c, resource: requests.cpu, divisor: 1m}}
      - {path: res/cpu_limit, resourceFieldRef: {containerName: c, resource: limits.cpu}}
      - {path: res/mem_request, resourceFieldRef: {containerName: c, resource: requests.memory}}
  containers:
  - name: c
    image: `+busyboxImage(t)+`
    command: `+sleeper+`
    resources:
      limits: {memory: 64Mi, cpu: 500m}
      requests: {memory: 32Mi, cpu: 250m}
    volumeMounts: [{name: info, mountPath: /info}]
`)
	want := map[string]string{
		"/info/labels":            formatMap(pod.Labels),
		"/info/annotations":       formatMap(pod.Annotations),
		"/info/name":              "downward",
		"/info/namespace":         ns,
		"/info/uid":               string(pod.UID),
		"/info/app":               "web",
		"/info/res/mem_limit_mi":  "64",
		"/info/res/cpu_request_m": "250",
		"/info/res/cpu_limit":     "1", // 0.5 cores rounded up
		"/info/res/mem_request":   "33554432",
	}
	for path, w := range want {
		if got := execIn(t, ns, pod.Name, "c", "cat", path); got != w {
			t.Errorf("%s reads %q, want %q", path, got, w)
		}
	}
	if !strings.Contains(want["/info/annotations"], `example.com/multi="a b"`) {
		t.Errorf("the pod's annotations lack the test's: %q", want["/info/annotations"])
	}
	for path, mode := range map[string]string{"/info/name": "444", "/info/app": "400", "/info/res/cpu_limit": "444"} {
		if got := modeOf(t, ns, pod.Name, "c", path); got != mode {
			t.Errorf("%s has mode %s, want %s", path, got, mode)
		}
	}

	cluster(t).MustKubectl(t, "", "label", "pod", "-n", ns, pod.Name, "tier=back", "--overwrite")
	waitFor(t, resyncTimeout, "the pod to see its new label", func() (bool, string) {
		out, err := tryExec(t, ns, pod.Name, "c", "cat", "/info/labels")
		return err == nil && out == "app=\"web\"\ntier=\"back\"", out
	})
}
