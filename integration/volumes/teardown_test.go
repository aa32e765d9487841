package volumes_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// TestNothingLeftMounted runs after every other test of the package: it is
// the package's only parallel test, and parallel tests start once all the
// sequential ones have finished. Every test has deleted its pods by then;
// their volumes must be unmounted and removed by the agent's teardown (not
// by its orphan collection, which waits over a minute), and stopping the
// agent and the server must leave nothing mounted under the agent's root
// dir. It stops the shared processes.
func TestNothingLeftMounted(t *testing.T) {
	t.Parallel()
	t.Cleanup(stopShared)
	if shared.err != nil {
		t.Fatalf("the package's cluster did not start: %v", shared.err)
	}
	if shared.c == nil {
		t.Log("no test of this run started the package's cluster: nothing to check")
		return
	}
	c := shared.c
	pods, err := c.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", c.Node).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		t.Errorf("pod %s/%s is left on the node: a test did not delete it", p.Namespace, p.Name)
	}

	podsDir := filepath.Join(c.AgentRootDir, "pods")
	waitFor(t, 30*time.Second, "the deleted pods' volumes to be unmounted and removed", func() (bool, string) {
		var left []string
		for _, m := range mountsUnder(t, podsDir) {
			left = append(left, m.MountPoint+" ("+m.FSType+")")
		}
		vols, _ := filepath.Glob(filepath.Join(podsDir, "*", "volume*"))
		left = append(left, vols...)
		return len(left) == 0, strings.Join(left, ", ")
	})

	stopShared()
	if _, err := os.Stat(c.AgentRootDir); err == nil {
		t.Errorf("the agent's root dir %s is still there after the package's cleanup", c.AgentRootDir)
	}
	if left := mountsUnder(t, c.AgentRootDir); len(left) > 0 {
		t.Errorf("mounted under the agent's root dir after the agent stopped: %v", left)
	}
}
