package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	berthadm "berth/controlplane/admission"
)

func TestPodSecurity(t *testing.T) {
	nss := indexer(t,
		namespace("locked", corev1.NamespaceActive, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
		namespace("base", corev1.NamespaceActive, map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}),
		namespace("open", corev1.NamespaceActive, nil),
	)
	p, err := berthadm.NewPodSecurity(berthadm.PodSecurityConfig{
		Namespaces: corelisters.NewNamespaceLister(nss),
		Pods:       corelisters.NewPodLister(indexer(t)),
	})
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	uid := int64(1000)
	privileged := func(ns string) *corev1.Pod {
		pod := newPod(ns, "priv")
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		return pod
	}
	restricted := func(ns string) *corev1.Pod {
		pod := newPod(ns, "good")
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		return pod
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"privileged in restricted", privileged("locked"),
			`pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true)`},
		{"plain pod in restricted", newPod("locked", "plain"),
			`violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`},
		{"restricted pod in restricted", restricted("locked"), ""},
		{"privileged in baseline", privileged("base"), `violates PodSecurity "baseline:latest": privileged`},
		{"plain pod in baseline", newPod("base", "plain"), ""},
		{"privileged in unlabelled namespace", privileged("open"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := admit(context.Background(), p, podCreate(tc.pod, alice))
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
