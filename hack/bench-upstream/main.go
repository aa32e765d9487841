// Command bench-upstream measures berth against upstream Kubernetes on one
// machine in one run (`make bench-upstream`, issue #20), as root, offline:
//
//  1. startup: pod startup on one containerd with the images present — the
//     berth agent with static pods, upstream's kubelet standalone with the
//     same static pods (--pod-manifest-path, cgroupfs, the same CNI
//     network), and a CRI floor (RunPodSandbox, CreateContainer,
//     StartContainer only, at most 2 × cores pods in flight), interleaved
//     repetitions per pod count;
//  2. e2e: `berth up` against upstream's etcd, kube-apiserver,
//     kube-scheduler, kube-controller-manager and kubelet on the same
//     containerd: a Deployment's pods from creation to Running (watch);
//  3. scale: the control planes alone with fake nodes (Node objects whose
//     Leases a driver renews) and pods created by a client-go driver at full
//     speed and at fixed rates;
//  4. crd: the control planes alone with CustomResourceDefinitions installed
//     and custom objects created (issue #16's memory figure).
//  5. controllers: a Job and a DaemonSet over fake nodes on `berth server`,
//     with berth's controllers, then with kube-controller-manager's job and
//     daemonset controllers instead (issue #15), the driver playing the
//     nodes' kubelets.
//
// It prints markdown tables (also written to -out as results.md, with every
// figure in results.json) and marks each goal of the issue met or missed.
// Upstream's binaries come from hack/conformance/build.sh
// (upstream-control-plane and kubelet sets); berth's from make build.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"berth/internal/mountinfo"
)

// bench is one run: its settings, the shared runtime and the results.
type bench struct {
	berth, upstreamBin, busybox string
	workParent, work, logs, out string
	bridge, podCIDR, svcCIDR    string
	clusterCIDR                 string
	maxN                        int
	agentArgs                   []string
	sides                       map[string]bool
	rt                          *runtimeEnv
	res                         results
}

// results is everything results.json holds.
type results struct {
	Started  time.Time         `json:"started"`
	Machine  machine           `json:"machine"`
	Versions map[string]string `json:"versions"`
	Startup  []startupRound    `json:"startup,omitempty"`
	E2E      []e2eRound        `json:"e2e,omitempty"`
	Scale    []scaleRound      `json:"scale,omitempty"`
	CRD      []crdRound        `json:"crd,omitempty"`
	// Controllers are the controller benchmark's rounds.
	Controllers []controllersRound `json:"controllers,omitempty"`
	Goals       []goal             `json:"goals"`
}

type machine struct {
	CPUs        int    `json:"cpus"`
	Kernel      string `json:"kernel"`
	LoadBefore  string `json:"loadBefore"`
	LoadAfter   string `json:"loadAfter"`
	MemTotalMiB int64  `json:"memTotalMiB"`
}

func main() {
	repo, _ := os.Getwd()
	b := &bench{}
	var (
		suites, ns, replicas, rates    string
		reps, e2eReps                  int
		nodes, pods, bigNodes, bigPods int
		crds                           crdPlan
		ctrl                           controllersPlan
	)
	flag.StringVar(&b.berth, "berth", filepath.Join(repo, "bin", "berth"), "the berth binary (make build; bin/pause beside it)")
	flag.StringVar(&b.upstreamBin, "upstream-bin", "/var/cache/berth/conformance/bin", "upstream's binaries (hack/conformance/build.sh upstream-control-plane kubelet)")
	flag.StringVar(&b.busybox, "busybox", "/bin/busybox", "static busybox for the pods' image")
	flag.StringVar(&b.workParent, "work-dir", "/var/tmp", "where the run's scratch directory (data dirs, etcd) is made; a tmpfs takes the disk out of the figures")
	flag.StringVar(&b.out, "out", "", "results directory (default /var/cache/berth/bench-upstream/<UTC time>)")
	flag.StringVar(&b.bridge, "bridge", "bbench0", "the pods' Linux bridge")
	flag.StringVar(&b.podCIDR, "pod-cidr", "10.65.0.0/24", "the pods' subnet")
	flag.StringVar(&b.clusterCIDR, "cluster-cidr", "10.65.0.0/16", "the scale benchmark's cluster CIDR (node IPAM, /29 per node)")
	flag.StringVar(&b.svcCIDR, "service-cidr", "10.165.0.0/20", "the Services' cluster IP range")
	flag.StringVar(&suites, "suites", "startup,e2e,scale,crd,controllers", "what to run: startup, e2e, scale, crd, controllers (comma-separated)")
	flag.StringVar(&ns, "n", "1,10,30,100", "startup: pod counts")
	flag.IntVar(&reps, "reps", 3, "startup: repetitions of each side per pod count, interleaved")
	flag.StringVar(&replicas, "replicas", "30,100", "e2e: Deployment sizes")
	flag.IntVar(&e2eReps, "e2e-reps", 1, "e2e: repetitions per size and side")
	flag.IntVar(&nodes, "nodes", 1000, "scale: fake nodes")
	flag.IntVar(&pods, "pods", 5000, "scale: pods per phase")
	flag.StringVar(&rates, "rates", "0,50,100", "scale: creation rates in pods/s (0: full speed)")
	flag.IntVar(&bigNodes, "big-nodes", 5000, "scale: fake nodes of the large phase (0: none)")
	flag.IntVar(&bigPods, "big-pods", 10000, "scale: pods of the large phase, at full speed")
	flag.IntVar(&crds.crds, "crds", 50, "crd: CustomResourceDefinitions")
	flag.IntVar(&crds.objects, "crd-objects", 10000, "crd: custom objects, spread evenly over the CRDs")
	flag.IntVar(&ctrl.completions, "job-completions", 1000, "controllers: the Job's completions")
	flag.IntVar(&ctrl.parallelism, "job-parallelism", 100, "controllers: the Job's parallelism")
	flag.IntVar(&ctrl.nodes, "controller-nodes", 1000, "controllers: fake nodes (the DaemonSet's pods)")
	agentArgs := flag.String("agent-args", "", "more flags for the berth agent of the startup benchmark, space-separated (e.g. \"--log-level debug\")")
	sides := flag.String("sides", "all", "the sides to run, for diagnosis (comma-separated): startup agent, kubelet, floor; scale and crd berth, upstream")
	flag.Parse()
	b.agentArgs = strings.Fields(*agentArgs)
	b.sides = map[string]bool{}
	for _, s := range strings.Split(*sides, ",") {
		b.sides[strings.TrimSpace(s)] = true
	}

	if err := b.run(strings.Split(suites, ","), atoi(ns), reps, atoi(replicas), e2eReps,
		scalePlan{nodes: nodes, pods: pods, rates: atoi(rates), bigNodes: bigNodes, bigPods: bigPods}, crds, ctrl); err != nil {
		fmt.Fprintln(os.Stderr, "bench-upstream:", err)
		os.Exit(1)
	}
}

func atoi(list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-upstream: %q is not a number\n", f)
			os.Exit(2)
		}
		out = append(out, v)
	}
	return out
}

func (b *bench) run(suites []string, ns []int, reps int, replicas []int, e2eReps int, plan scalePlan, crds crdPlan, ctrl controllersPlan) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root (containerd, CNI, cgroups)")
	}
	want := map[string]bool{}
	for _, s := range suites {
		want[strings.TrimSpace(s)] = true
	}
	for _, bin := range []string{b.berth, filepath.Join(filepath.Dir(b.berth), "pause")} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%w (make build)", err)
		}
	}
	for _, name := range []string{"kubelet", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "etcd"} {
		if _, err := os.Stat(filepath.Join(b.upstreamBin, name)); err != nil {
			return fmt.Errorf("%w (hack/conformance/build.sh upstream-control-plane kubelet)", err)
		}
	}
	b.res.Started = time.Now().UTC()
	if b.out == "" {
		b.out = filepath.Join("/var/cache/berth/bench-upstream", b.res.Started.Format("20060102T150405Z"))
	}
	var err error
	if b.work, err = os.MkdirTemp(b.workParent, "bbench-"); err != nil {
		return err
	}
	defer func() {
		// The kubelet bind-mounts its root dir onto itself.
		if err := mountinfo.UnmountAll(b.work); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		os.RemoveAll(b.work)
	}()
	b.logs = filepath.Join(b.out, "logs")
	if err := os.MkdirAll(b.logs, 0o755); err != nil {
		return err
	}
	for _, n := range ns {
		b.maxN = max(b.maxN, n)
	}
	b.res.Machine = machine{CPUs: runtime.NumCPU(), Kernel: readTrim("/proc/sys/kernel/osrelease"), LoadBefore: readTrim("/proc/loadavg"), MemTotalMiB: memTotalMiB()}
	b.res.Versions = map[string]string{
		"berth":      cmdOut("git", "describe", "--always", "--dirty"),
		"kubernetes": cmdOut(filepath.Join(b.upstreamBin, "kubelet"), "--version"),
		"etcd":       firstLine(cmdOut(filepath.Join(b.upstreamBin, "etcd"), "--version")),
		"go":         runtime.Version(),
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if want["startup"] || want["e2e"] {
		b.rt, err = startRuntime(ctx, filepath.Join(b.work, "runtime"), filepath.Join(filepath.Dir(b.berth), "pause"), b.busybox, b.bridge, b.podCIDR)
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		defer b.rt.stop()
		b.res.Versions["containerd"] = b.rt.cri.RuntimeVersion().GetRuntimeVersion()
	}
	var errs []error
	if want["startup"] {
		errs = append(errs, b.startupSuite(ctx, ns, reps))
	}
	if want["e2e"] && ctx.Err() == nil {
		errs = append(errs, b.e2eSuite(ctx, replicas, e2eReps))
	}
	if want["scale"] && ctx.Err() == nil {
		errs = append(errs, b.scaleSuite(ctx, plan))
	}
	if want["crd"] && ctx.Err() == nil {
		errs = append(errs, b.crdSuite(ctx, crds))
	}
	if want["controllers"] && ctx.Err() == nil {
		errs = append(errs, b.controllersSuite(ctx, ctrl))
	}
	b.res.Machine.LoadAfter = readTrim("/proc/loadavg")
	if err := b.report(); err != nil {
		errs = append(errs, err)
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// report writes results.json and results.md and prints the tables.
func (b *bench) report() error {
	md := b.markdown()
	fmt.Print(md)
	data, err := json.MarshalIndent(b.res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.out, "results.json"), data, 0o644); err != nil {
		return err
	}
	fmt.Printf("\nresults: %s/results.json, results.md; logs in %s\n", b.out, b.logs)
	return os.WriteFile(filepath.Join(b.out, "results.md"), []byte(md), 0o644)
}

// freePort is a TCP port on 127.0.0.1 free at the time of the call.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func memTotalMiB() int64 {
	for _, line := range strings.Split(readTrim("/proc/meminfo"), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb / 1024
		}
	}
	return 0
}

func cmdOut(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
