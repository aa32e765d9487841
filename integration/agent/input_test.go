package agent_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// An image that does not exist gives ErrImagePull with the runtime's
// message, then ImagePullBackOff, and the pod stays Pending.
func TestMissingImage(t *testing.T) {
	n := newNode(t, "--image-backoff-initial", "2s", "--image-backoff-max", "4s")
	n.start()
	image := n.env.Registry + "/berth/does-not-exist:1"
	n.write("ghost.yaml", strings.Replace(podManifest(n.env, "ghost", "", "app="+sleeper), n.env.BusyboxImage, image, 1))
	seen := map[string]string{}
	p := n.waitPod("ghost-n1", "ErrImagePull then ImagePullBackOff", time.Minute, func(p *v1.Pod) bool {
		if w := containerStatus(p, "app").State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
			seen[w.Reason] = w.Message
		}
		return seen["ErrImagePull"] != "" && seen["ImagePullBackOff"] != ""
	})
	if p.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	if msg := seen["ErrImagePull"]; !strings.Contains(msg, "does-not-exist") || !strings.Contains(msg, "not found") {
		t.Errorf("ErrImagePull message %q lacks the runtime's message", msg)
	}
	if msg := seen["ImagePullBackOff"]; !strings.Contains(msg, "Back-off pulling image") {
		t.Errorf("ImagePullBackOff message %q", msg)
	}
	// Pull policy Never: an image not on the node is not pulled.
	never := strings.Replace(podManifest(n.env, "never", "", "app="+sleeper), n.env.BusyboxImage, n.env.Registry+"/berth/busybox:absent", 1)
	n.write("never.yaml", never+"    imagePullPolicy: Never\n")
	n.waitPod("never-n1", "ErrImageNeverPull", time.Minute, func(p *v1.Pod) bool {
		w := containerStatus(p, "app").State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull"
	})
	n.removeAllAndWait()
}

// An invalid manifest is logged with its file and field and skipped; the
// other pods run.
func TestInvalidManifestIsSkipped(t *testing.T) {
	n := newNode(t)
	a := n.start()
	n.write("bad.yaml", strings.Replace(podManifest(n.env, "bad", "  restartPolicy: Sometimes\n", "app="+sleeper), "", "", 0))
	n.write("notyaml.yaml", "{{{ this is not a pod")
	n.write("good.yaml", podManifest(n.env, "good", "", "app="+sleeper))
	n.waitPod("good-n1", "Running", time.Minute, running)
	eventually(t, 10*time.Second, "log lines naming the files and the field", func() (bool, string) {
		l := a.Log()
		return strings.Contains(l, "bad.yaml") && strings.Contains(l, "spec.restartPolicy") && strings.Contains(l, "notyaml.yaml"), l
	})
	if pods, err := n.pods(); err != nil || len(pods) != 1 {
		t.Fatalf("GET /pods = %d pods (%v), want only the good one", len(pods), err)
	}
	n.removeAllAndWait()
}
