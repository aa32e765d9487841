package validation

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// debugger is a defaulted, valid ephemeral container.
func debugger(name string) v1.EphemeralContainer {
	return v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: name, Image: "busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
		TerminationMessagePath: v1.TerminationMessagePathDefault, TerminationMessagePolicy: v1.TerminationMessageReadFile,
		Stdin: true, TTY: true,
	}}
}

func TestValidatePodEphemeralContainersUpdate(t *testing.T) {
	ec := "spec.ephemeralContainers"
	for name, tc := range map[string]struct {
		old    []v1.EphemeralContainer
		mutate func(*v1.Pod)
		wants  []want
	}{
		"first added": {mutate: func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("dbg")} }},
		"second appended": {old: []v1.EphemeralContainer{debugger("dbg")}, mutate: func(p *v1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("dbg2"))
		}},
		"reordered is not a change": {old: []v1.EphemeralContainer{debugger("a"), debugger("b")}, mutate: func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("b"), debugger("a")}
		}},
		"removed": {old: []v1.EphemeralContainer{debugger("dbg")}, mutate: func(p *v1.Pod) { p.Spec.EphemeralContainers = nil },
			wants: []want{{field.ErrorTypeForbidden, ec, `existing ephemeral containers "dbg" may not be removed`}}},
		"changed": {old: []v1.EphemeralContainer{debugger("dbg")}, mutate: func(p *v1.Pod) { p.Spec.EphemeralContainers[0].Image = "busybox:1.37" },
			wants: []want{{field.ErrorTypeForbidden, ec, `existing ephemeral containers "dbg" may not be changed`}}},
		"name taken by a container": {mutate: func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("app")} },
			wants: []want{{field.ErrorTypeDuplicate, ec + "[0].name", ""}}},
		"unknown target": {mutate: func(p *v1.Pod) {
			d := debugger("dbg")
			d.TargetContainerName = "nope"
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{d}
		}, wants: []want{{field.ErrorTypeNotFound, ec + "[0].targetContainerName", ""}}},
		"fields ephemeral containers may not set": {mutate: func(p *v1.Pod) {
			d := debugger("dbg")
			d.Ports = []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}}
			d.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
			d.Lifecycle = &v1.Lifecycle{}
			d.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired}}
			d.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "x"}}
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{d}
		}, wants: []want{
			{field.ErrorTypeForbidden, ec + "[0].ports", ephemeralForbidden},
			{field.ErrorTypeForbidden, ec + "[0].resources", ephemeralForbidden},
			{field.ErrorTypeForbidden, ec + "[0].lifecycle", ephemeralForbidden},
			{field.ErrorTypeForbidden, ec + "[0].resizePolicy", ephemeralForbidden},
			{field.ErrorTypeForbidden, ec + "[0].volumeMounts[0].subPath", ephemeralForbidden},
		}},
		"mirror pod": {mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("dbg")}
		}, wants: []want{{field.ErrorTypeForbidden, "[]", "static pods do not support ephemeral containers"}}},
	} {
		t.Run(name, func(t *testing.T) {
			old := validPod()
			old.ResourceVersion = "1"
			old.Spec.EphemeralContainers = tc.old
			if name == "mirror pod" {
				old.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			}
			pod := old.DeepCopy()
			tc.mutate(pod)
			checkErrors(t, ValidatePodEphemeralContainersUpdate(pod, old), tc.wants...)
		})
	}
}

// The main pod resource still refuses ephemeral containers on update: they
// change only through the subresource.
func TestValidatePodUpdateRefusesEphemeralContainers(t *testing.T) {
	old := validPod()
	old.ResourceVersion = "1"
	pod := old.DeepCopy()
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("dbg")}
	checkErrors(t, ValidatePodUpdate(pod, old), want{field.ErrorTypeForbidden, "spec", "pod updates may not change fields"})
}
