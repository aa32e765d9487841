package containerd

import (
	"berth/internal/prereq"
	"os"
	"os/exec"
	"testing"
)

// The capability check must agree with what the kernel does: a process
// without CAP_SYS_RESOURCE cannot lower its oom_score_adj below zero.
func TestNeedRestrictOOMScoreAdjMatchesTheKernel(t *testing.T) {
	need, err := NeedRestrictOOMScoreAdj()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		prereq.Missing(t, "root: as non-root the write fails for other reasons")
	}
	// A child tries what containerd does for sandboxes; its failure is the truth.
	err = exec.Command("/bin/sh", "-c", "echo -998 > /proc/self/oom_score_adj").Run()
	if kernelRefused := err != nil; kernelRefused != need {
		t.Fatalf("NeedRestrictOOMScoreAdj = %v, but writing a negative oom_score_adj failed = %v (%v)", need, kernelRefused, err)
	}
}

func TestResolveRestrictOOMScoreAdj(t *testing.T) {
	detected, err := NeedRestrictOOMScoreAdj()
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	for _, tt := range []struct {
		name string
		set  *bool
		want bool
	}{
		{"unset detects", nil, detected},
		{"true wins over detection", &yes, true},
		{"false wins over detection", &no, false},
	} {
		got, err := Config{RestrictOOMScoreAdj: tt.set}.ResolveRestrictOOMScoreAdj()
		if err != nil || got != tt.want {
			t.Errorf("%s: ResolveRestrictOOMScoreAdj() = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}
