package manifest

import (
	"errors"
	"strings"
	"testing"

	"berth/internal/errdefs"
)

// TestStaticPodsMayNotReferenceAPIObjects: as the kubelet, a static pod
// naming a service account, Secret, ConfigMap, claim or API-backed volume
// is refused with upstream's message; API-free volumes are fine.
func TestStaticPodsMayNotReferenceAPIObjects(t *testing.T) {
	const head = "apiVersion: v1\nkind: Pod\nmetadata: {name: s}\nspec:\n"
	const ctr = "  containers:\n  - name: c\n    image: busybox\n"
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"plain", ctr, ""},
		{"API-free volumes", ctr + "  volumes:\n  - {name: a, emptyDir: {}}\n  - {name: b, hostPath: {path: /tmp}}\n  - name: c\n    downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}\n  - name: d\n    projected: {sources: [{downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}}]}\n", ""},
		{"service account", "  serviceAccountName: sa\n" + ctr, "serviceaccounts"},
		{"secret env", ctr + "    env: [{name: X, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n", "secrets"},
		{"secret envFrom", ctr + "    envFrom: [{secretRef: {name: s}}]\n", "secrets"},
		{"image pull secret", ctr + "  imagePullSecrets: [{name: s}]\n", "secrets"},
		{"secret volume", ctr + "  volumes: [{name: v, secret: {secretName: s}}]\n", "secrets"},
		{"configMap env", ctr + "    env: [{name: X, valueFrom: {configMapKeyRef: {name: c, key: k}}}]\n", "configmaps"},
		{"configMap envFrom", ctr + "    envFrom: [{configMapRef: {name: c}}]\n", "configmaps"},
		{"projected configMap", ctr + "  volumes: [{name: v, projected: {sources: [{configMap: {name: c}}]}}]\n", "configmaps"},
		{"claim", ctr + "  volumes: [{name: v, persistentVolumeClaim: {claimName: c}}]\n", "persistentvolumeclaims"},
		{"csi", ctr + "  volumes: [{name: v, csi: {driver: d}}]\n", "csidrivers (via CSI volumes)"},
		{"token", ctr + "  volumes: [{name: v, projected: {sources: [{serviceAccountToken: {path: t}}]}}]\n", "serviceaccounts (via projected volumes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(head+tc.spec), "/m/s.yaml", "node1")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := "/m/s.yaml: static pods may not reference " + tc.want
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("Load = %v, want %q (ErrInvalidArgument)", err, want)
			}
		})
	}
}
