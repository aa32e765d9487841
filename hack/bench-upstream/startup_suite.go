package main

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// startupSuite runs every pod count reps times per side, the sides
// interleaved and their order rotated each repetition.
func (b *bench) startupSuite(ctx context.Context, ns []int, reps int) error {
	var sides []string
	for _, side := range []string{sideAgent, sideKubelet, sideFloor} {
		if b.sides[strings.Fields(side)[len(strings.Fields(side))-1]] || b.sides["all"] {
			sides = append(sides, side)
		}
	}
	for rep := range reps {
		for _, n := range ns {
			for i := range sides {
				side := sides[(i+rep)%len(sides)]
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r, err := b.runStartupRound(ctx, side, n, rep)
				if err != nil {
					return fmt.Errorf("startup %s n=%d rep %d: %w", side, n, rep, err)
				}
				fmt.Fprintf(os.Stderr, "startup %-11s n=%-3d rep %d: p50 %6.0f ms  p99 %6.0f ms  total %6.0f ms  teardown %6.0f ms  RSS %5.1f MiB  CPU %5.2f s\n",
					side, n, rep, r.P50Ms, r.P99Ms, r.TotalMs, r.TeardownMs, r.RSSMiB, r.CPUSec)
				b.res.Startup = append(b.res.Startup, r)
			}
		}
	}
	return nil
}

// startupStat is one figure of a side at one N over its repetitions.
func (b *bench) startupStat(side string, n int, f func(startupRound) float64) spread {
	var v []float64
	for _, r := range b.res.Startup {
		if r.Side == side && r.N == n {
			v = append(v, f(r))
		}
	}
	return spreadOf(v)
}

func (b *bench) startupMarkdown() string {
	if len(b.res.Startup) == 0 {
		return ""
	}
	var ns []int
	seen := map[int]bool{}
	for _, r := range b.res.Startup {
		if !seen[r.N] {
			seen[r.N] = true
			ns = append(ns, r.N)
		}
	}
	var s strings.Builder
	reps := 0
	for _, r := range b.res.Startup {
		if r.Side == sideAgent && r.N == ns[0] {
			reps++
		}
	}
	fmt.Fprintf(&s, "\n### Pod startup on one containerd (images present; %d repetitions, median (min–max))\n\n", reps)
	fmt.Fprintf(&s, "Per pod from a common t0 (the first manifest written, or the floor's first CRI call) to the container's StartedAt; teardown until no container runs and no sandbox is ready. The floor issues RunPodSandbox, CreateContainer and StartContainer only, at most %d pods in flight.\n\n", floorParallel())
	s.WriteString("| pods | side | p50 | p99 | total | teardown | RSS idle → running | CPU |\n|---|---|---|---|---|---|---|---|\n")
	p50 := func(r startupRound) float64 { return r.P50Ms }
	p99 := func(r startupRound) float64 { return r.P99Ms }
	total := func(r startupRound) float64 { return r.TotalMs }
	td := func(r startupRound) float64 { return r.TeardownMs }
	rss := func(r startupRound) float64 { return r.RSSMiB }
	idle := func(r startupRound) float64 { return r.IdleRSSMiB }
	cpu := func(r startupRound) float64 { return r.CPUSec }
	for _, n := range ns {
		for _, side := range []string{sideAgent, sideKubelet, sideFloor} {
			res := "—"
			cpuS := "—"
			if side != sideFloor {
				res = fmtSpread(b.startupStat(side, n, idle), "%.0f") + " → " + fmtSpread(b.startupStat(side, n, rss), "%.0f MiB")
				cpuS = fmtSpread(b.startupStat(side, n, cpu), "%.2f s")
			}
			fmt.Fprintf(&s, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", n, side,
				fmtSpread(b.startupStat(side, n, p50), "%.0f ms"), fmtSpread(b.startupStat(side, n, p99), "%.0f ms"),
				fmtSpread(b.startupStat(side, n, total), "%.0f ms"), fmtSpread(b.startupStat(side, n, td), "%.0f ms"), res, cpuS)
		}
	}
	s.WriteString("\nRatios of the medians (agent ÷ kubelet, agent ÷ floor):\n\n| pods | p50 ÷ kubelet | p99 ÷ kubelet | total ÷ kubelet | teardown ÷ kubelet | RSS ÷ kubelet | CPU ÷ kubelet | p50 ÷ floor | p99 ÷ floor | total ÷ floor |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range ns {
		r := func(f func(startupRound) float64, other string) float64 {
			return ratio(b.startupStat(sideAgent, n, f).Median, b.startupStat(other, n, f).Median)
		}
		fmt.Fprintf(&s, "| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n,
			r(p50, sideKubelet), r(p99, sideKubelet), r(total, sideKubelet), r(td, sideKubelet), r(rss, sideKubelet), r(cpu, sideKubelet),
			r(p50, sideFloor), r(p99, sideFloor), r(total, sideFloor))
	}
	return s.String()
}

// startupGoals are issue #20's goals for the agent.
func (b *bench) startupGoals() []goal {
	var gs []goal
	med := func(side string, n int, f func(startupRound) float64) float64 {
		return b.startupStat(side, n, f).Median
	}
	has := func(n int) bool {
		return med(sideAgent, n, func(r startupRound) float64 { return float64(r.N) }) == float64(n)
	}
	if has(1) {
		gs = append(gs, goal{What: "agent: one pod on an idle node, t0 → StartedAt", Measured: med(sideAgent, 1, func(r startupRound) float64 { return r.P50Ms }), Limit: 200, Unit: " ms"})
	}
	for _, n := range []int{30, 100} {
		if !has(n) {
			continue
		}
		k := func(what string, f func(startupRound) float64, other string, limit float64) {
			gs = append(gs, goal{What: fmt.Sprintf("agent %s ÷ %s, %d pods", what, other, n), Measured: ratio(med(sideAgent, n, f), med(other, n, f)), Limit: limit})
		}
		k("p50", func(r startupRound) float64 { return r.P50Ms }, sideKubelet, 0.6)
		k("p99", func(r startupRound) float64 { return r.P99Ms }, sideKubelet, 0.9)
		k("total", func(r startupRound) float64 { return r.TotalMs }, sideKubelet, 0.9)
		k("p99", func(r startupRound) float64 { return r.P99Ms }, sideFloor, 1.05)
		k("total", func(r startupRound) float64 { return r.TotalMs }, sideFloor, 1.05)
		k("RSS", func(r startupRound) float64 { return r.RSSMiB }, sideKubelet, 1.0/3)
		k("CPU", func(r startupRound) float64 { return r.CPUSec }, sideKubelet, 0.5)
	}
	return gs
}
