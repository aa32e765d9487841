package up

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkJob runs a Job of 3 completions (2 at a time) on the real node: it
// must reach Complete with 3 succeeded pods, none left holding the
// job-tracking finalizer.
func checkJob(t *testing.T, ctx context.Context, exited <-chan struct{}, kc func(...string) (string, error)) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: batch/v1
kind: Job
metadata: {name: three, namespace: default}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: docker.io/berth/busybox:1
        command: ["sh", "-c", "echo done"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kc("apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply job: %v\n%s", err, out)
	}
	poll(t, ctx, exited, "job three to complete", func() bool {
		out, err := kc("get", "job", "three", "-o", `jsonpath={.status.conditions[?(@.type=="Complete")].status}`)
		return err == nil && out == "True"
	})
	// Zero counts are omitted from the status.
	out, err := kc("get", "job", "three", "-o", "jsonpath={.status.succeeded}/{.status.failed}/{.status.active}")
	if err != nil || out != "3//" {
		t.Errorf("job three succeeded/failed/active = %q (%v), want 3//", out, err)
	}
	out, err = kc("get", "pods", "-l", "batch.kubernetes.io/job-name=three", "-o", "jsonpath={range .items[*]}{.status.phase}/{.metadata.finalizers} {end}")
	if err != nil || strings.Count(out, "Succeeded/ ") != 3 || strings.Contains(out, "job-tracking") {
		t.Errorf("job three's pods: %q (%v), want 3 Succeeded without the tracking finalizer", out, err)
	}
	// kubectl picks one of the pods (and says so on stderr).
	if logs, err := kc("logs", "job/three"); err != nil || !strings.HasSuffix(logs, "\ndone\n") {
		t.Errorf("kubectl logs job/three = %q (%v)", logs, err)
	}
}
