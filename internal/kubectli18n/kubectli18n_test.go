package kubectli18n

import "testing"

func TestRunsKubectl(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"berth", "kubectl", "get", "pods"}, true},
		{[]string{"berth", "kubectl"}, true},
		{[]string{"/usr/local/bin/berth", "kubectl", "--help"}, true},
		{[]string{"berth", "agent", "--pod-manifest-path", "kubectl"}, false},
		{[]string{"berth", "server"}, false},
		{[]string{"berth"}, false},
		{nil, false},
	} {
		if got := RunsKubectl(tc.args); got != tc.want {
			t.Errorf("RunsKubectl(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
