package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"berth/internal/api/scheme"
	"berth/internal/errdefs"
)

// FuzzLoad feeds arbitrary static-pod files to Load. A refused file is an
// ErrInvalidArgument naming the file. An accepted one keeps its identity
// when re-written: the decoded pod, encoded as JSON and decoded again,
// encodes the same and gets the same UID (the UID depends on the content,
// not on its spelling).
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		podYAML,
		podJSON,
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, resources: {limits: {cpu: 1.0, memory: 1e3}}}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: kube-system, labels: {a: b}}\nspec: {hostNetwork: true, containers: [{name: c, image: i, env: [{name: A, value: b}]}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i}], volumes: [{name: s, secret: {secretName: s}}]}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\n",
		"kind: Pod\n",
		"{}",
		"- a\n- b\n",
		"",
	} {
		f.Add([]byte(s))
	}
	const file, node = "/etc/berth/manifests/p.yaml", "node1"
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, err := Load(data, file, node)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("Load: %v does not wrap ErrInvalidArgument", err)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(file)) {
				t.Fatalf("Load: %v does not name the file", err)
			}
			return
		}
		if pod.UID != UID(data, node, file) {
			t.Fatalf("Load's UID %s differs from UID()'s %s", pod.UID, UID(data, node, file))
		}
		decoded, err := scheme.DecodePod(data)
		if err != nil {
			t.Fatalf("Load accepted what DecodePod refuses: %v", err)
		}
		decoded.APIVersion, decoded.Kind = "v1", "Pod"
		first, err := json.Marshal(decoded)
		if err != nil {
			t.Fatal(err)
		}
		again, err := scheme.DecodePod(first)
		if err != nil {
			t.Fatalf("the decoded pod's JSON %s does not decode: %v", first, err)
		}
		again.APIVersion, again.Kind = "v1", "Pod"
		second, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("decode → encode → decode changed the pod:\n%s\n%s", first, second)
		}
		if u := UID(first, node, file); u != pod.UID {
			t.Fatalf("the re-encoded manifest has UID %s, the original %s", u, pod.UID)
		}
	})
}
