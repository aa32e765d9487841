package resources

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConnectOptionsFromTheQuery(t *testing.T) {
	exec, _ := execOptions(url.Values{"command": {"sh", "-c", "id"}, "stdin": {"1"}, "stdout": {"true"}, "stderr": {"FALSE"}, "tty": {""}, "container": {"app"}})
	want := &corev1.PodExecOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodExecOptions"},
		Command: []string{"sh", "-c", "id"}, Stdin: true, Stdout: true, Stderr: false, TTY: true, Container: "app"}
	if !reflect.DeepEqual(exec, want) {
		t.Errorf("exec options %+v, want %+v", exec, want)
	}
	attach, _ := attachOptions(url.Values{"stdout": {"0"}, "stderr": {"yes"}})
	if a := attach.(*corev1.PodAttachOptions); a.Stdout || !a.Stderr || a.Stdin || a.Kind != "PodAttachOptions" {
		t.Errorf("attach options %+v", a)
	}
	pf, err := portForwardOptions(url.Values{"ports": {"80", "8080"}})
	if p := pf.(*corev1.PodPortForwardOptions); err != nil || !reflect.DeepEqual(p.Ports, []int32{80, 8080}) {
		t.Errorf("port-forward options %+v %v", pf, err)
	}
	if _, err := portForwardOptions(url.Values{"ports": {"http"}}); err == nil || !strings.Contains(err.Error(), `ports: "http"`) {
		t.Errorf("a port that is not a number: %v, want an error naming it", err)
	}
}
