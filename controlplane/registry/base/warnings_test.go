package base

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodWarnings(t *testing.T) {
	negative := int64(-1)
	spec := func(rc *v1.ReplicationController) *v1.PodSpec {
		if rc.Spec.Template == nil {
			return nil
		}
		return &rc.Spec.Template.Spec
	}
	warn := WithPodNameWarning(PodSpecWarnings("spec.template.spec", spec))
	rc := &v1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "Web.1"}}
	if w := warn(rc); len(w) != 1 || !strings.HasPrefix(w[0], "metadata.name: this is used in Pod names and hostnames") {
		t.Errorf("name warnings %q", w)
	}
	rc.Name = "web"
	rc.Spec.Template = &v1.PodTemplateSpec{Spec: v1.PodSpec{TerminationGracePeriodSeconds: &negative}}
	if w := warn(rc); len(w) != 1 || !strings.HasPrefix(w[0], "spec.template.spec.terminationGracePeriodSeconds: must be >= 0") {
		t.Errorf("template warnings %q", w)
	}
	onNewGeneration := WhenChanged(Generation, PodSpecWarnings("spec.template.spec", spec))
	if w := onNewGeneration(rc, rc.DeepCopy()); w != nil {
		t.Errorf("same generation warned: %q", w)
	}
	old := rc.DeepCopy()
	rc.Generation = 2
	if w := onNewGeneration(rc, old); len(w) != 1 {
		t.Errorf("new generation: %q", w)
	}
}
