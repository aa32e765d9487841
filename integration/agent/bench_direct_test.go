package agent_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"berth/agent/containerconfig"
	"berth/agent/sandboxconfig"
	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

// directRound is the benchmark's baseline, measured in the same run on the
// same containerd: the same count pods started with no agent at all, by
// calling CRI directly — RunPodSandbox, CreateContainer, StartContainer —
// every pod at once, as a runtime client with no policy of its own would;
// the image is present (startupRound pulled it).
// It returns the per-pod latencies from the start of the round to each
// container's startedAt, sorted.
func directRound(b *testing.B, n *node, count int) []time.Duration {
	b.Helper()
	ctx := context.Background()
	sbOpts := sandboxconfig.Options{PodLogDir: n.logs, CgroupRoot: n.cgroupRoot}
	type job struct {
		name string
		run  func() (time.Time, error)
	}
	jobs := make([]job, count)
	for i := range count {
		name := fmt.Sprintf("direct-%03d", i)
		pod, err := scheme.DecodePod([]byte(podManifest(n.env, name, "", "app="+sleeper)))
		if err != nil {
			b.Fatal(err)
		}
		pod.Namespace, pod.UID = "default", types.UID(fmt.Sprintf("direct-%03d-%d", i, time.Now().UnixNano()))
		defaults.Pod(pod)
		sbCfg, err := sandboxconfig.Build(pod, sbOpts)
		if err != nil {
			b.Fatal(err)
		}
		ctrCfg, err := containerconfig.Build(pod, &pod.Spec.Containers[0], containerconfig.Options{})
		if err != nil {
			b.Fatal(err)
		}
		jobs[i] = job{name: name, run: func() (time.Time, error) {
			sb, err := n.cri.RunPodSandbox(ctx, sbCfg, "")
			if err != nil {
				return time.Time{}, err
			}
			id, err := n.cri.CreateContainer(ctx, sb, ctrCfg, sbCfg)
			if err != nil {
				return time.Time{}, err
			}
			if err := n.cri.StartContainer(ctx, id); err != nil {
				return time.Time{}, err
			}
			st, err := n.cri.ContainerStatus(ctx, id, false)
			if err != nil {
				return time.Time{}, err
			}
			return time.Unix(0, st.GetStatus().GetStartedAt()), nil
		}}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
	)
	b.StartTimer()
	start := time.Now()
	for _, j := range jobs {
		wg.Go(func() {
			at, err := j.run()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", j.name, err))
				return
			}
			lat = append(lat, at.Sub(start))
		})
	}
	wg.Wait()
	b.StopTimer()
	n.forceRemovePods()
	if len(errs) > 0 {
		b.Fatalf("direct CRI start of %d pods: %d failed, e.g. %v", count, len(errs), errs[0])
	}
	slices.Sort(lat)
	return lat
}
