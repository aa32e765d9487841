package admission_test

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	corelisters "k8s.io/client-go/listers/core/v1"

	berthadm "berth/controlplane/admission"
)

func TestNodeRestriction(t *testing.T) {
	mine := newPod("ns", "mine")
	mine.UID = "uid-mine"
	mine.Spec.NodeName = "node1"
	theirs := newPod("ns", "theirs")
	theirs.UID = "uid-theirs"
	theirs.Spec.NodeName = "node2"
	p, err := berthadm.NewNodeRestriction(berthadm.NodeRestrictionConfig{Pods: corelisters.NewPodLister(indexer(t, mine, theirs))})
	if err != nil {
		t.Fatal(err)
	}
	node1 := &user.DefaultInfo{Name: "system:node:node1", Groups: []string{"system:nodes"}}

	mirror := func(nodeName string, mutate func(*corev1.Pod)) *corev1.Pod {
		pod := newPod("ns", "static-"+nodeName)
		pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		pod.Spec.NodeName = nodeName
		if mutate != nil {
			mutate(pod)
		}
		return pod
	}
	nodeObj := func(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	nodeGVK, nodeGVR := corev1.SchemeGroupVersion.WithKind("Node"), corev1.SchemeGroupVersion.WithResource("nodes")
	nodeUpdate := func(newN, oldN *corev1.Node, sub string) admission.Attributes {
		return admission.NewAttributesRecord(newN, oldN, nodeGVK, "", newN.Name, nodeGVR, sub, admission.Update, &metav1.UpdateOptions{}, false, node1)
	}
	podStatus := func(pod *corev1.Pod) admission.Attributes {
		return admission.NewAttributesRecord(pod, pod, podGVK, pod.Namespace, pod.Name, podGVR, "status", admission.Update, &metav1.UpdateOptions{}, false, node1)
	}
	podDelete := func(name string) admission.Attributes {
		return admission.NewAttributesRecord(nil, nil, podGVK, "ns", name, podGVR, "", admission.Delete, &metav1.DeleteOptions{}, false, node1)
	}
	token := func(ref *authenticationv1.BoundObjectReference) admission.Attributes {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref}}
		return admission.NewAttributesRecord(tr, nil, authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), "ns", "app",
			corev1.SchemeGroupVersion.WithResource("serviceaccounts"), "token", admission.Create, &metav1.CreateOptions{}, false, node1)
	}
	lease := func(ns, name string) admission.Attributes {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		return createAttrs(l, coordinationv1.SchemeGroupVersion.WithKind("Lease"), coordinationv1.SchemeGroupVersion.WithResource("leases"), ns, "", node1)
	}

	cases := []struct {
		name  string
		attrs admission.Attributes
		want  string // "" allowed
	}{
		{"mirror pod on itself", podCreate(mirror("node1", nil), node1), ""},
		{"plain pod", podCreate(newPod("ns", "plain"), node1), `pod does not have "kubernetes.io/config.mirror" annotation, node "node1" can only create mirror pods`},
		{"mirror pod on another node", podCreate(mirror("node2", nil), node1), `node "node1" can only create pods with spec.nodeName set to itself`},
		{"mirror pod with secret", podCreate(mirror("node1", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}), node1), `node "node1" can not create pods that reference secrets`},
		{"update own pod status", podStatus(mine), ""},
		{"add ephemeral containers to own pod", admission.NewAttributesRecord(mine, mine, podGVK, "ns", "mine", podGVR, "ephemeralcontainers", admission.Update, &metav1.UpdateOptions{}, false, node1),
			`unexpected pod subresource "ephemeralcontainers", only 'status' and 'eviction' are allowed`},
		{"update other node's pod status", podStatus(theirs), `node "node1" can only update pod status for pods with spec.nodeName set to itself`},
		{"delete own pod", podDelete("mine"), ""},
		{"delete other node's pod", podDelete("theirs"), `node "node1" can only delete pods with spec.nodeName set to itself`},
		{"register itself with kubelet labels", createAttrs(nodeObj("node1", map[string]string{"kubernetes.io/hostname": "node1", "node.kubernetes.io/instance-type": "x", "example.com/team": "a"}), nodeGVK, nodeGVR, "", "", node1), ""},
		{"register another node", createAttrs(nodeObj("node2", nil), nodeGVK, nodeGVR, "", "", node1), `node "node1" is not allowed to modify node "node2"`},
		{"register with role label", createAttrs(nodeObj("node1", map[string]string{"node-role.kubernetes.io/control-plane": "", "node-restriction.kubernetes.io/secure": "yes"}), nodeGVK, nodeGVR, "", "", node1),
			`node "node1" is not allowed to set the following labels: node-restriction.kubernetes.io/secure, node-role.kubernetes.io/control-plane`},
		{"relabel itself into a role", nodeUpdate(nodeObj("node1", map[string]string{"node-role.kubernetes.io/master": ""}), nodeObj("node1", nil), ""), `is not allowed to modify labels: node-role.kubernetes.io/master`},
		{"remove a restricted label", nodeUpdate(nodeObj("node1", nil), nodeObj("node1", map[string]string{"node-restriction.kubernetes.io/pool": "a"}), ""), `is not allowed to modify labels: node-restriction.kubernetes.io/pool`},
		{"unrestricted label change", nodeUpdate(nodeObj("node1", map[string]string{"example.com/x": "2"}), nodeObj("node1", map[string]string{"example.com/x": "1"}), ""), ""},
		{"remove own taint", nodeUpdate(nodeObj("node1", nil), nodeObj("node1", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}), ""), `node "node1" is not allowed to modify taints`},
		{"update other node status", nodeUpdate(nodeObj("node2", nil), nodeObj("node2", nil), "status"), `node "node1" is not allowed to modify node "node2"`},
		{"token for own pod", token(&authenticationv1.BoundObjectReference{Kind: "Pod", Name: "mine", UID: "uid-mine"}), ""},
		{"token for other node's pod", token(&authenticationv1.BoundObjectReference{Kind: "Pod", Name: "theirs", UID: "uid-theirs"}), "node requested token bound to a pod scheduled on a different node"},
		{"unbound token", token(nil), "node requested token not bound to a pod"},
		{"token for a recreated pod", token(&authenticationv1.BoundObjectReference{Kind: "Pod", Name: "mine", UID: "old"}), "does not match the UID in record"},
		{"own lease", lease("kube-node-lease", "node1"), ""},
		{"other node's lease", lease("kube-node-lease", "node2"), "can only access node lease with the same name as the requesting node"},
		{"not a node", podCreate(newPod("ns", "x"), alice), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := admit(context.Background(), p, tc.attrs)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantStatus(t, err, 403, tc.want)
		})
	}
}
