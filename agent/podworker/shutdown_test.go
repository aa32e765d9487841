package podworker

import (
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"berth/cri/critest"
)

// Regression: a worker created while Run was stopping added to the wait
// group concurrently with Run's Wait (reported by -race).
func TestUpdatesRacingShutdown(t *testing.T) {
	h := newHarness(t, critest.NewServer(t))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				h.m.Update(testPod(fmt.Sprintf("p%d-%d", g, i), v1.RestartPolicyAlways, nil, "app"))
			}
		}()
	}
	h.stop()
	wg.Wait()
}
