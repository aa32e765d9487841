package podworker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"berth/agent/volumes"
	"berth/cri/critest"
)

// A volume that fails to set up is reported by agent/volumes alone (one
// FailedMount event per failed attempt, none from the worker), and the
// worker tries again when the volume manager's back-off ends — here after
// 500 ms of the shared fake clock, well before the worker's own 2 s
// default and its (1 h) resync.
func TestVolumeSetUpRetriesWithTheVolumeBackOff(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	clk := clocktesting.NewFakeClock(time.Now())
	events := &eventLog{rec: record.NewFakeRecorder(1000)}
	h := newConfiguredHarness(t, srv, func(cfg *Config) {
		vols, err := volumes.New(volumes.Config{RootDir: cfg.RootDir, Recorder: events.rec, Clock: clk,
			MountBackOffInitial: 500 * time.Millisecond, MountBackOffMax: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Volumes, cfg.Recorder, cfg.Clock, cfg.Resync = vols, events.rec, clk, time.Hour
	})
	dir := filepath.Join(t.TempDir(), "later")
	pod := testPod("mountretry", v1.RestartPolicyAlways, nil, "app")
	directory := v1.HostPathDirectory
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir, Type: &directory}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	h.m.Update(pod)

	failedMount := func() []string {
		var out []string
		for _, e := range events.list() {
			if strings.HasPrefix(e, "Warning "+volumes.ReasonFailedMount+" ") {
				out = append(out, e)
			}
		}
		return out
	}
	want := fmt.Sprintf(`Warning FailedMount MountVolume.SetUp failed for volume "data" : hostPath type check failed: %s is not a directory`, dir)
	eventually(t, "the FailedMount event", func() (bool, string) {
		return len(failedMount()) > 0, strings.Join(events.list(), "\n")
	})
	if got := failedMount(); len(got) != 1 || got[0] != want {
		t.Fatalf("FailedMount events %q, want exactly %q", got, want)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Fake time moves in 100 ms steps up to 1.9 s: the retry must come
	// from the volume back-off (500 ms), not the worker's 2 s default.
	var stepped time.Duration
	eventually(t, "running after the volume back-off", func() (bool, string) {
		if h.running(pod.UID, "app") != nil {
			return true, ""
		}
		if stepped < 1900*time.Millisecond {
			clk.Step(100 * time.Millisecond)
			stepped += 100 * time.Millisecond
		}
		return false, fmt.Sprintf("fake time stepped %v", stepped)
	})
	if got := failedMount(); len(got) != 1 {
		t.Errorf("FailedMount events %q, want the one failure's only", got)
	}
}
