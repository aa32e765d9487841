package podworker

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"berth/cri/critest"
)

// A ClusterFirst pod on a node without cluster DNS gets upstream's
// MissingClusterDNS warning twice, as from the kubelet: on the pod, naming
// it, and on the Node (the harness's "node1"). Events go through client-go's
// own recorder into a clientset, so the involved objects are the real ones.
func TestMissingClusterDNSEventsOnPodAndNode(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	client := fake.NewClientset()
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	recorder := broadcaster.NewRecorder(kubescheme.Scheme, v1.EventSource{Component: "kubelet", Host: "node1"})
	h := newConfiguredHarness(t, srv, func(cfg *Config) { cfg.Recorder = recorder })
	pod := testPod("nodns", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)

	const node = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	var onPod, onNode *v1.Event
	eventually(t, "MissingClusterDNS on the pod and the node", func() (bool, string) {
		list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for i := range list.Items {
			ev := &list.Items[i]
			seen = append(seen, fmt.Sprintf("%s %s/%s: %s %s", ev.InvolvedObject.Kind, ev.Namespace, ev.InvolvedObject.Name, ev.Reason, ev.Message))
			if ev.Reason != "MissingClusterDNS" {
				continue
			}
			switch ev.InvolvedObject.Kind {
			case "Pod":
				onPod = ev
			case "Node":
				onNode = ev
			}
		}
		return onPod != nil && onNode != nil, fmt.Sprint(seen)
	})
	wantPod := `pod: "nodns_default(uid-nodns)". ` + node
	if onPod.Type != v1.EventTypeWarning || onPod.Message != wantPod || onPod.InvolvedObject.Name != "nodns" || onPod.InvolvedObject.UID != pod.UID {
		t.Errorf("pod event %s %q on %+v, want Warning %q on the pod", onPod.Type, onPod.Message, onPod.InvolvedObject, wantPod)
	}
	if onNode.Type != v1.EventTypeWarning || onNode.Message != node || onNode.InvolvedObject.Name != "node1" ||
		onNode.InvolvedObject.UID != "node1" || onNode.InvolvedObject.Namespace != "" {
		t.Errorf("node event %s %q on %+v, want Warning %q on Node node1", onNode.Type, onNode.Message, onNode.InvolvedObject, node)
	}
}
