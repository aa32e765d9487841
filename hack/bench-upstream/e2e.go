package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"berth/internal/mountinfo"
)

// e2eRound is one Deployment brought up on one cluster.
type e2eRound struct {
	Side     string `json:"side"`
	Replicas int    `json:"replicas"`
	Rep      int    `json:"rep"`
	// RunningMs are the per-pod times from the Deployment's create request
	// to the watch showing every container of the pod running.
	RunningMs  []float64 `json:"runningMs"`
	P50Ms      float64   `json:"p50Ms"`
	P99Ms      float64   `json:"p99Ms"`
	TotalMs    float64   `json:"totalMs"`
	TeardownMs float64   `json:"teardownMs"`
	// FirstPodMs is the side's warm-up: from the cluster reporting ready
	// (berth up's "cluster ready", upstream's Node Ready) to a first pod
	// of one replica running.
	FirstPodMs float64            `json:"firstPodMs"`
	RSSMiB     float64            `json:"rssMiB"`
	CPUSec     float64            `json:"cpuSec"`
	RSSByProc  map[string]float64 `json:"rssByProcMiB"`

	since time.Duration // from the cluster ready to the Deployment's creation
}

const (
	e2eBerth    = "berth up"
	e2eUpstream = "upstream"
)

// e2eSuite brings each side up once per repetition and runs every
// Deployment size on it, the sides alternating.
func (b *bench) e2eSuite(ctx context.Context, replicas []int, reps int) error {
	for rep := range reps {
		for i, side := range []string{e2eBerth, e2eUpstream} {
			if rep%2 == 1 {
				side = []string{e2eUpstream, e2eBerth}[i]
			}
			if err := b.e2eSide(ctx, side, replicas, rep); err != nil {
				return fmt.Errorf("e2e %s: %w", side, err)
			}
		}
	}
	return nil
}

func (b *bench) e2eSide(ctx context.Context, side string, replicas []int, rep int) error {
	dir := filepath.Join(b.work, fmt.Sprintf("e2e-%d-%s", rep, strings.ReplaceAll(side, " ", "-")))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer func() {
		if err := mountinfo.UnmountAll(dir); err != nil { // the kubelet's root dir
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		os.RemoveAll(dir)
	}()
	if err := b.rt.writeCNIConfig(); err != nil {
		return err
	}
	var (
		c   *controlPlane
		err error
	)
	if side == e2eBerth {
		c, err = b.startBerthUp(ctx, dir)
	} else {
		c, err = b.startUpstreamNode(ctx, dir)
	}
	if c != nil {
		defer func() {
			c.stop()
			if err := b.rt.removeAll(); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
			}
			_ = removeCgroup(kubeletCgroupRoot)
		}()
	}
	if err != nil {
		return err
	}
	// A first Deployment of one pod warms the node up; its time from the
	// cluster ready is reported on its own.
	warm, err := b.deployment(ctx, c, side, 1, rep)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	time.Sleep(settle)
	for _, n := range replicas {
		r, err := b.deployment(ctx, c, side, n, rep)
		if err != nil {
			return fmt.Errorf("%d replicas: %w", n, err)
		}
		r.FirstPodMs = warm.TotalMs + ms(warm.since)
		fmt.Fprintf(os.Stderr, "e2e %-8s replicas=%-3d rep %d: p50 %6.0f ms  p99 %6.0f ms  total %6.0f ms  teardown %6.0f ms  RSS %6.1f MiB  CPU %5.2f s\n",
			side, n, rep, r.P50Ms, r.P99Ms, r.TotalMs, r.TeardownMs, r.RSSMiB, r.CPUSec)
		b.res.E2E = append(b.res.E2E, r)
	}
	return nil
}

// startBerthUp runs `berth up` on the shared runtime and waits for its
// node to be Ready.
func (b *bench) startBerthUp(ctx context.Context, dir string) (*controlPlane, error) {
	c := &controlPlane{name: "berth"}
	logPath := filepath.Join(b.logs, "berth-up.log")
	p, err := startProc("berth up", logPath, b.berth, "up", "--data-dir", filepath.Join(dir, "data"),
		"--container-runtime-endpoint", b.rt.endpoint, "--cni-conf-dir", b.rt.cniConfDir, "--cni-bin-dir", cniBinDir,
		"--pod-cidr", b.podCIDR, "--cni-bridge", b.rt.bridge, "--service-cluster-ip-range", b.svcCIDR,
		"--listen", "127.0.0.1:0", "--kubelet-port", strconv.Itoa(freePort()), "--disable-ingress", "--node-name", "bbench-up")
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	use := regexp.MustCompile(`use: kubectl --kubeconfig (\S+) `)
	if err := waitFor(5*time.Minute, 200*time.Millisecond, "berth up: cluster ready", func() (bool, error) {
		log, _ := os.ReadFile(logPath)
		if m := use.FindSubmatch(log); m != nil {
			c.kubeconfig = string(m[1])
			return true, nil
		}
		return false, c.alive()
	}); err != nil {
		return c, err
	}
	c.ready = time.Now()
	if err := c.connect(); err != nil {
		return c, err
	}
	return c, c.waitDefaultServiceAccount(ctx)
}

// startUpstreamNode runs upstream's control plane and a kubelet joined to
// it (a system:node credential) on the shared runtime, and waits for the
// node to be Ready.
func (b *bench) startUpstreamNode(ctx context.Context, dir string) (*controlPlane, error) {
	c, err := b.startUpstream(ctx, dir)
	if err != nil {
		return nil, err
	}
	const node = "bbench-kubelet"
	if err := c.pki.issue("node", "system:node:"+node, []string{"system:nodes"}, false, nil, nil); err != nil {
		return c, err
	}
	nodeKubeconfig := filepath.Join(dir, "node.kubeconfig")
	if err := c.pki.kubeconfig(nodeKubeconfig, c.config.Host, "node"); err != nil {
		return c, err
	}
	k, err := b.startKubelet(kubeletOptions{dir: filepath.Join(dir, "kubelet"), kubeconfig: nodeKubeconfig, clientCA: c.pki.path("ca.crt"),
		nodeName: node, cgroupRoot: kubeletCgroupRoot, port: freePort(), healthz: freePort()})
	if err != nil {
		return c, err
	}
	c.procs = append(c.procs, k)
	return c, waitFor(3*time.Minute, 500*time.Millisecond, "node "+node+" Ready", func() (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, c.alive()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue {
				c.ready = time.Now()
				return true, nil
			}
		}
		return false, c.alive()
	})
}

// deployment creates a Deployment of n replicas, watches its pods until
// each has all containers running, then deletes it and waits for the pods
// to be gone.
func (b *bench) deployment(ctx context.Context, c *controlPlane, side string, n, rep int) (e2eRound, error) {
	r := e2eRound{Side: side, Replicas: n, Rep: rep}
	name := fmt.Sprintf("bbench-%d-%d", n, rep)
	labels := map[string]string{"app": name}
	grace := int64(5)
	replicas := int32(n)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []v1.Container{{Name: "main", Image: b.rt.busyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}},
				},
			},
		},
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	selector := "app=" + name
	w, err := c.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return r, err
	}
	defer w.Stop()
	u0 := usageOf(c.pids()...)
	t0 := time.Now()
	r.since = t0.Sub(c.ready)
	if _, err := c.client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	var lat []time.Duration
	running := map[string]bool{}
	for len(running) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return r, fmt.Errorf("the watch ended with %d of %d pods running", len(running), n)
			}
			pod, isPod := ev.Object.(*v1.Pod)
			if !isPod || ev.Type == watch.Deleted || running[pod.Name] || !allRunning(pod) {
				continue
			}
			running[pod.Name] = true
			lat = append(lat, time.Since(t0))
		case <-ctx.Done():
			return r, fmt.Errorf("%d of %d pods running after 15 minutes: %w", len(running), n, c.alive())
		}
	}
	u1 := usageOf(c.pids()...)
	for _, l := range lat {
		r.RunningMs = append(r.RunningMs, ms(l))
	}
	r.P50Ms, r.P99Ms, r.TotalMs = ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(percentile(lat, 100))
	r.RSSMiB, r.CPUSec, r.RSSByProc = mib(u1.RSS), (u1.CPU - u0.CPU).Seconds(), c.usageByProcess()

	td := time.Now()
	bg := metav1.DeletePropagationBackground
	if err := c.client.AppsV1().Deployments("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return r, err
	}
	err = waitFor(10*time.Minute, 200*time.Millisecond, "the Deployment's pods gone", func() (bool, error) {
		list, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, c.alive()
	})
	r.TeardownMs = ms(time.Since(td))
	return r, err
}

// allRunning reports a pod whose every container runs (the pod startup
// SLI's "all containers started").
func allRunning(pod *v1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

func (b *bench) e2eStat(side string, n int, f func(e2eRound) float64) spread {
	var v []float64
	for _, r := range b.res.E2E {
		if r.Side == side && r.Replicas == n {
			v = append(v, f(r))
		}
	}
	return spreadOf(v)
}

func (b *bench) e2eSizes() []int {
	var ns []int
	seen := map[int]bool{}
	for _, r := range b.res.E2E {
		if !seen[r.Replicas] {
			seen[r.Replicas] = true
			ns = append(ns, r.Replicas)
		}
	}
	return ns
}

func (b *bench) e2eMarkdown() string {
	if len(b.res.E2E) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("\n### End to end: a Deployment's pods, creation → all containers running (watch), same containerd\n\n")
	s.WriteString("berth up: one process (apiserver, embedded etcd, controllers, scheduler, agent with its service proxy and DNS). Upstream: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet (no kube-proxy, no DNS). RSS with the pods running, CPU from the create to the last pod running; median (min–max) over repetitions. Each cluster first runs a Deployment of one pod (its time from the cluster reporting ready — berth up's \"cluster ready\", upstream's Node Ready — is the last column).\n\n")
	s.WriteString("| replicas | side | p50 | p99 | last pod | teardown | RSS | CPU | ready → first pod |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range b.e2eSizes() {
		for _, side := range []string{e2eBerth, e2eUpstream} {
			fmt.Fprintf(&s, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, side,
				fmtSpread(b.e2eStat(side, n, func(r e2eRound) float64 { return r.P50Ms }), "%.0f ms"),
				fmtSpread(b.e2eStat(side, n, func(r e2eRound) float64 { return r.P99Ms }), "%.0f ms"),
				fmtSpread(b.e2eStat(side, n, func(r e2eRound) float64 { return r.TotalMs }), "%.0f ms"),
				fmtSpread(b.e2eStat(side, n, func(r e2eRound) float64 { return r.TeardownMs }), "%.0f ms"),
				fmtSpread(b.e2eStat(side, n, func(r e2eRound) float64 { return r.RSSMiB }), "%.0f MiB"),
				fmtSpread(b.e2eStat(side, n, func(r e2eRound) float64 { return r.CPUSec }), "%.2f s"),
				fmtSpread(b.e2eStat(side, n, func(r e2eRound) float64 { return r.FirstPodMs }), "%.0f ms"))
		}
	}
	for _, r := range b.res.E2E {
		if r.Side == e2eUpstream {
			var parts []string
			for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"} {
				parts = append(parts, fmt.Sprintf("%s %.0f", name, r.RSSByProc[name]))
			}
			fmt.Fprintf(&s, "\nUpstream's RSS by process at %d replicas (MiB): %s.\n", r.Replicas, strings.Join(parts, ", "))
			break
		}
	}
	return s.String()
}

func (b *bench) e2eGoals() []goal {
	var gs []goal
	for _, n := range b.e2eSizes() {
		p99 := func(r e2eRound) float64 { return r.P99Ms }
		gs = append(gs, goal{What: fmt.Sprintf("end to end p99 ÷ upstream, %d replicas", n),
			Measured: ratio(b.e2eStat(e2eBerth, n, p99).Median, b.e2eStat(e2eUpstream, n, p99).Median), Limit: 0.75})
	}
	return gs
}
