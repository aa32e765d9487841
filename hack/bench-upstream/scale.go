package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
)

// scalePlan is the control-plane benchmark's sizes.
type scalePlan struct {
	nodes, pods       int
	rates             []int // pods/s; 0 is full speed
	bigNodes, bigPods int
}

// scaleRound is one phase: pods created at a rate on a cluster of fake
// nodes, until every one is bound.
type scaleRound struct {
	Side  string `json:"side"`
	Nodes int    `json:"nodes"`
	Pods  int    `json:"pods"`
	Rate  int    `json:"rate"` // 0: full speed
	// CreatedPerSec is pods over the time from the first create request to
	// the last response; BoundPerSec over the time to the last pod bound
	// (as the driver's watch saw it).
	CreatedPerSec float64 `json:"createdPerSec"`
	BoundPerSec   float64 `json:"boundPerSec"`
	CreateP50Ms   float64 `json:"createP50Ms"`
	CreateP99Ms   float64 `json:"createP99Ms"`
	// WatchP50Ms/P99Ms: from a create's response to the watch's ADDED
	// event for the pod (0 when the event came first).
	WatchP50Ms float64 `json:"watchP50Ms"`
	WatchP99Ms float64 `json:"watchP99Ms"`
	// BindP50Ms/P99Ms: from a create's response to the watch showing the
	// pod bound.
	BindP50Ms float64 `json:"bindP50Ms"`
	BindP99Ms float64 `json:"bindP99Ms"`
	// MaxUnbound is the largest number of created but not yet bound pods
	// seen (sampled every 100 ms): the scheduler's backlog.
	MaxUnbound int `json:"maxUnbound"`
	// CreateRetries counts creates the server failed (timeouts) and the
	// driver retried.
	CreateRetries int64              `json:"createRetries"`
	ListP50Ms     float64            `json:"listP50Ms"` // LIST of 1000 pods
	RSSMiB        float64            `json:"rssMiB"`
	RSSByProc     map[string]float64 `json:"rssByProcMiB"`
	CPUSec        float64            `json:"cpuSec"`
}

const (
	scaleBerth    = "berth server"
	scaleUpstream = "upstream"
)

// scaleSuite runs each side on its own data: nodes, then a phase per rate,
// then the large phase.
func (b *bench) scaleSuite(ctx context.Context, plan scalePlan) error {
	for _, side := range []string{scaleBerth, scaleUpstream} {
		if !b.sides["all"] && !b.sides[strings.Fields(side)[0]] {
			continue
		}
		if err := b.scaleSide(ctx, side, plan); err != nil {
			return fmt.Errorf("scale %s: %w", side, err)
		}
	}
	return nil
}

func (b *bench) scaleSide(ctx context.Context, side string, plan scalePlan) error {
	c, stop, err := b.startControlPlane(ctx, "scale", side)
	if err != nil {
		return err
	}
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodes := &fakeNodes{client: c.client}
	if err := nodes.grow(ctx, plan.nodes); err != nil {
		return err
	}
	go nodes.renew(ctx)
	phase := func(nodeCount, pods, rate int, name string) error {
		r, err := b.scalePhase(ctx, c, side, nodeCount, pods, rate, name)
		if err != nil {
			if r.BoundPerSec > 0 { // measured; the clean-up failed
				b.res.Scale = append(b.res.Scale, r)
			}
			return err
		}
		fmt.Fprintf(os.Stderr, "scale %-12s nodes=%-5d pods=%-5d rate=%-4d: created %6.1f/s bound %6.1f/s create p50 %5.1f ms p99 %6.1f ms watch p99 %6.1f ms backlog %5d LIST %6.1f ms RSS %6.1f MiB\n",
			side, nodeCount, pods, rate, r.CreatedPerSec, r.BoundPerSec, r.CreateP50Ms, r.CreateP99Ms, r.WatchP99Ms, r.MaxUnbound, r.ListP50Ms, r.RSSMiB)
		b.res.Scale = append(b.res.Scale, r)
		return nil
	}
	for i, rate := range plan.rates {
		if err := phase(plan.nodes, plan.pods, rate, fmt.Sprintf("bbench-%d", i)); err != nil {
			return err
		}
	}
	if plan.bigNodes > 0 && plan.bigPods > 0 {
		if err := nodes.grow(ctx, plan.bigNodes); err != nil {
			return err
		}
		if err := phase(plan.bigNodes, plan.bigPods, 0, "bbench-big"); err != nil {
			return err
		}
	}
	if err := nodes.err(); err != nil {
		// An overloaded server fails some renewals: said, not fatal.
		fmt.Fprintf(os.Stderr, "scale %s: %d lease renewals failed, e.g. %v\n", side, nodes.failures.Load(), err)
	}
	return nil
}

// fakeNodes are Node objects with a Ready status and a Lease the driver
// renews every 10 s, as a kubelet does; no agent runs for them.
type fakeNodes struct {
	client   *kubernetes.Clientset
	mu       sync.Mutex
	names    []string
	renewEr  error
	failures atomic.Int64
}

// grow creates nodes until there are n.
func (f *fakeNodes) grow(ctx context.Context, n int) error {
	f.mu.Lock()
	have := len(f.names)
	f.mu.Unlock()
	err := inParallel(n-have, 16, func(i int) error {
		name := fmt.Sprintf("bbench-node-%05d", have+i)
		if err := f.create(ctx, name); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		f.mu.Lock()
		f.names = append(f.names, name)
		f.mu.Unlock()
		return nil
	})
	return err
}

func (f *fakeNodes) create(ctx context.Context, name string) error {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}}}
	if _, err := f.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return err
	}
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110")}
	// The node IPAM controller may write the spec in between: retry.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := f.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		current.Status = v1.NodeStatus{
			Capacity: capacity, Allocatable: capacity, Phase: v1.NodeRunning,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
			Addresses:  []v1.NodeAddress{{Type: v1.NodeHostName, Address: name}},
			NodeInfo:   v1.NodeSystemInfo{KubeletVersion: "v1.34.4", OperatingSystem: "linux", Architecture: "amd64"},
		}
		_, err = f.client.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	dur := int32(40)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &dur, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	_, err = f.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
	return err
}

// renew renews every node's Lease once per 10 s, spread over the interval,
// until ctx ends.
func (f *fakeNodes) renew(ctx context.Context) {
	const period = 10 * time.Second
	for ctx.Err() == nil {
		f.mu.Lock()
		names := append([]string(nil), f.names...)
		f.mu.Unlock()
		start := time.Now()
		tick := time.NewTicker(period / time.Duration(len(names)+1))
		for _, name := range names {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case <-tick.C:
			}
			go func() {
				leases := f.client.CoordinationV1().Leases(v1.NamespaceNodeLease)
				l, err := leases.Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
					_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
				}
				if err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
					f.failures.Add(1)
					f.mu.Lock()
					f.renewEr = fmt.Errorf("renewing %s's lease: %w", name, err)
					f.mu.Unlock()
				}
			}()
		}
		tick.Stop()
		time.Sleep(time.Until(start.Add(period)))
	}
}

func (f *fakeNodes) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renewEr
}

// scalePhase creates pods in a fresh namespace at rate (0: as fast as 32
// clients can), watches them until every one is bound, measures a LIST of
// 1000 pods and the processes' RSS, and deletes the namespace's pods.
func (b *bench) scalePhase(ctx context.Context, c *controlPlane, side string, nodes, pods, rate int, ns string) (scaleRound, error) {
	r := scaleRound{Side: side, Nodes: nodes, Pods: pods, Rate: rate}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	if err := waitFor(time.Minute, 200*time.Millisecond, "namespace "+ns+"'s default ServiceAccount", func() (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return r, err
	}
	// A retry watcher resumes from the last event if the server ends the
	// watch under load.
	initial, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return r, err
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, initial.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.client.CoreV1().Pods(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		return r, err
	}
	defer w.Stop()
	type times struct{ start, done, added, bound time.Time }
	all := make([]times, pods)
	index := func(name string) int {
		var i int
		if _, err := fmt.Sscanf(name, "p-%d", &i); err != nil || i < 0 || i >= pods {
			return -1
		}
		return i
	}
	var created, bound, failed atomic.Int64
	var mu sync.Mutex
	watchDone := make(chan error, 1)
	go func() {
		for bound.Load() < int64(pods) {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					watchDone <- fmt.Errorf("the watch ended with %d of %d pods bound", bound.Load(), pods)
					return
				}
				if ev.Type == watch.Error {
					watchDone <- fmt.Errorf("watch: %v", apierrors.FromObject(ev.Object))
					return
				}
				pod, isPod := ev.Object.(*v1.Pod)
				if !isPod || ev.Type == watch.Deleted {
					continue
				}
				i := index(pod.Name)
				if i < 0 {
					continue
				}
				now := time.Now()
				mu.Lock()
				if all[i].added.IsZero() {
					all[i].added = now
				}
				if pod.Spec.NodeName != "" && all[i].bound.IsZero() {
					all[i].bound = now
					bound.Add(1)
				}
				mu.Unlock()
			case <-ctx.Done():
				watchDone <- ctx.Err()
				return
			}
		}
		watchDone <- nil
	}()

	u0 := usageOf(c.pids()...)
	create := func(i int) error {
		pod := scalePod(fmt.Sprintf("p-%d", i))
		start := time.Now()
		_, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		// An overloaded server's timeout is counted and retried (the pod
		// may exist already); the latency spans the attempts.
		for attempt := 0; err != nil && attempt < 5 && (apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)); attempt++ {
			failed.Add(1)
			_, err = c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		done := time.Now()
		mu.Lock()
		all[i].start, all[i].done = start, done
		mu.Unlock()
		created.Add(1)
		return err
	}
	backlog := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-backlog:
				return
			case <-t.C:
				r.MaxUnbound = max(r.MaxUnbound, int(created.Load()-bound.Load()))
			}
		}
	}()
	if side == scaleBerth && rate == 0 {
		// Where berth server's time goes at full speed: a CPU profile of
		// the phase's first 20 s (its /debug/pprof, as the admin).
		go b.profile(ctx, c, fmt.Sprintf("berth-server-cpu-%d-nodes.pprof", nodes))
	}
	t0 := time.Now()
	if rate == 0 {
		err = inParallel(pods, 32, create)
	} else {
		err = paced(pods, rate, create)
	}
	if err != nil {
		close(backlog)
		return r, fmt.Errorf("create: %w", err)
	}
	select {
	case err = <-watchDone:
	case <-time.After(15 * time.Minute):
		err = fmt.Errorf("%d of %d pods bound after 15 minutes", bound.Load(), pods)
	}
	close(backlog)
	if err != nil {
		return r, err
	}
	u1 := usageOf(c.pids()...)
	var createLat, watchLat, bindLat []time.Duration
	var lastDone, lastBound time.Time
	for _, t := range all {
		createLat = append(createLat, t.done.Sub(t.start))
		watchLat = append(watchLat, max(0, t.added.Sub(t.done)))
		bindLat = append(bindLat, max(0, t.bound.Sub(t.done)))
		if t.done.After(lastDone) {
			lastDone = t.done
		}
		if t.bound.After(lastBound) {
			lastBound = t.bound
		}
	}
	r.CreatedPerSec = float64(pods) / lastDone.Sub(t0).Seconds()
	r.BoundPerSec = float64(pods) / lastBound.Sub(t0).Seconds()
	r.CreateP50Ms, r.CreateP99Ms = ms(percentile(createLat, 50)), ms(percentile(createLat, 99))
	r.WatchP50Ms, r.WatchP99Ms = ms(percentile(watchLat, 50)), ms(percentile(watchLat, 99))
	r.BindP50Ms, r.BindP99Ms = ms(percentile(bindLat, 50)), ms(percentile(bindLat, 99))
	r.RSSMiB, r.RSSByProc, r.CPUSec = mib(u1.RSS), c.usageByProcess(), (u1.CPU - u0.CPU).Seconds()
	r.CreateRetries = failed.Load()

	var lists []time.Duration
	for range 10 {
		start := time.Now()
		list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1000})
		if err != nil {
			return r, err
		}
		if len(list.Items) != min(1000, pods) {
			return r, fmt.Errorf("LIST of 1000 pods returned %d", len(list.Items))
		}
		lists = append(lists, time.Since(start))
	}
	r.ListP50Ms = ms(percentile(lists, 50))

	// Pods bound to fake nodes are deleted at once (no kubelet confirms).
	// A DeleteCollection the server cuts off at its request timeout is
	// sent again until the namespace is empty.
	zero := int64(0)
	return r, waitFor(15*time.Minute, time.Second, "namespace "+ns+"'s pods deleted", func() (bool, error) {
		list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(list.Items) == 0 {
			return err == nil, nil
		}
		_ = c.client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		return false, nil
	})
}

// paced runs fn(0..n-1) at rate calls per second, each in its own
// goroutine, and returns the first error once all have returned.
func paced(n, rate int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		wg.Go(func() {
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// scalePod is a small pod for a fake node: it never runs.
func scalePod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bbench-scale"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10.1",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}}}}},
	}
}

// startControlPlane starts side's control plane (scaleBerth or
// scaleUpstream) on a fresh directory of the suite; stop ends it and
// removes the directory.
func (b *bench) startControlPlane(ctx context.Context, suite, side string) (*controlPlane, func(), error) {
	dir := filepath.Join(b.work, suite+"-"+strings.ReplaceAll(side, " ", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	var c *controlPlane
	var err error
	if side == scaleBerth {
		c, err = b.startBerthServer(ctx, dir)
	} else {
		c, err = b.startUpstream(ctx, dir)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return c, func() { c.stop(); os.RemoveAll(dir) }, nil
}

func (b *bench) scaleRoundOf(side string, nodes, rate int) *scaleRound {
	for i := range b.res.Scale {
		r := &b.res.Scale[i]
		if r.Side == side && r.Nodes == nodes && r.Rate == rate {
			return r
		}
	}
	return nil
}

func (b *bench) scaleMarkdown() string {
	if len(b.res.Scale) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("\n### Control plane at scale, no containers (fake nodes with Leases renewed every 10 s)\n\n")
	s.WriteString("berth server (embedded etcd, controllers, scheduler: one process) vs etcd + kube-apiserver + kube-controller-manager + kube-scheduler. Pods created by a client-go driver (full speed: 32 concurrent clients); bound: the driver's watch sees spec.nodeName; watch: from a create's response to its ADDED event; backlog: most pods created but not yet bound; LIST: 1000 pods; RSS after the phase, CPU during it.\n\n")
	s.WriteString("| side | nodes | pods | rate | created/s | created+bound/s | create p50 | create p99 | watch p50 / p99 | bind p50 / p99 | backlog | LIST 1000 p50 | RSS | CPU | create retries |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range b.res.Scale {
		rate := "full"
		if r.Rate > 0 {
			rate = fmt.Sprintf("%d/s", r.Rate)
		}
		fmt.Fprintf(&s, "| %s | %d | %d | %s | %.1f | %.1f | %.1f ms | %.1f ms | %.1f / %.1f ms | %.0f / %.0f ms | %d | %.1f ms | %.0f MiB | %.1f s | %d |\n",
			r.Side, r.Nodes, r.Pods, rate, r.CreatedPerSec, r.BoundPerSec, r.CreateP50Ms, r.CreateP99Ms, r.WatchP50Ms, r.WatchP99Ms,
			r.BindP50Ms, r.BindP99Ms, r.MaxUnbound, r.ListP50Ms, r.RSSMiB, r.CPUSec, r.CreateRetries)
	}
	for _, r := range b.res.Scale {
		if r.Side == scaleUpstream {
			var parts []string
			for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
				parts = append(parts, fmt.Sprintf("%s %.0f", name, r.RSSByProc[name]))
			}
			fmt.Fprintf(&s, "\nUpstream's RSS by process after the first phase (MiB): %s.\n", strings.Join(parts, ", "))
			break
		}
	}
	return s.String()
}

func (b *bench) scaleGoals() []goal {
	var gs []goal
	if len(b.res.Scale) == 0 {
		return nil
	}
	first := b.res.Scale[0]
	if bs, us := b.scaleRoundOf(scaleBerth, first.Nodes, 0), b.scaleRoundOf(scaleUpstream, first.Nodes, 0); bs != nil && us != nil {
		gs = append(gs,
			goal{What: fmt.Sprintf("created-and-bound pods/s ÷ upstream, %d nodes", first.Nodes), Measured: ratio(bs.BoundPerSec, us.BoundPerSec), Limit: 2, AtLeast: true},
			goal{What: fmt.Sprintf("berth server RSS ÷ upstream's four processes, %d nodes / %d pods", first.Nodes, first.Pods), Measured: ratio(bs.RSSMiB, us.RSSMiB), Limit: 0.25})
	}
	for _, rate := range []int{50, 100} {
		if bs, us := b.scaleRoundOf(scaleBerth, first.Nodes, rate), b.scaleRoundOf(scaleUpstream, first.Nodes, rate); bs != nil && us != nil {
			gs = append(gs, goal{What: fmt.Sprintf("create p99 ÷ upstream at %d pods/s", rate), Measured: ratio(bs.CreateP99Ms, us.CreateP99Ms), Limit: 0.25})
		}
	}
	for i := range b.res.Scale {
		r := b.res.Scale[i]
		if r.Side == scaleBerth && r.Nodes > first.Nodes {
			// The scheduler keeps up when pods are bound about as fast as
			// they are created: bound/s at least 90% of created/s.
			gs = append(gs, goal{What: fmt.Sprintf("scheduler not the bottleneck at %d nodes: created+bound/s ÷ created/s", r.Nodes),
				Measured: ratio(r.BoundPerSec, r.CreatedPerSec), Limit: 0.9, AtLeast: true})
		}
	}
	return gs
}

// profile saves a 20 s CPU profile of berth server into the logs
// directory (go tool pprof -top berth FILE reads it).
func (b *bench) profile(ctx context.Context, c *controlPlane, name string) {
	data, err := c.client.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "20").DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(filepath.Join(b.logs, name), data, 0o644)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "bench: CPU profile:", err)
	}
}
