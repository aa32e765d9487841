package main

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// percentile is the p-th percentile (nearest rank, 0 < p ≤ 100) of ds; 0
// for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p*float64(len(s))/100 + 0.999999) // ceil(p/100·n)
	return s[min(max(rank, 1), len(s))-1]
}

// spread is the minimum, median and maximum of values over repetitions.
type spread struct {
	Min, Median, Max float64
}

func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	s := slices.Clone(values)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Min: s[0], Median: med, Max: s[len(s)-1]}
}

// fmtSpread prints "median (min–max)" with unit, or just the value for one
// repetition.
func fmtSpread(s spread, format string) string {
	if s.Min == s.Max {
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// goal is one target of issue #20 with its measured ratio.
type goal struct {
	What     string  `json:"what"`
	Measured float64 `json:"measured"`
	Limit    float64 `json:"limit"`
	// AtLeast: the goal is Measured ≥ Limit (otherwise ≤).
	AtLeast bool   `json:"atLeast,omitempty"`
	Unit    string `json:"unit,omitempty"`
}

// Met reports whether the measured value satisfies the goal.
func (g goal) Met() bool {
	if g.AtLeast {
		return g.Measured >= g.Limit
	}
	return g.Measured <= g.Limit
}

func (g goal) row() string {
	verdict, rel := "met", "≤"
	if g.AtLeast {
		rel = "≥"
	}
	if !g.Met() {
		verdict = "**missed**"
	}
	unit := g.Unit
	if unit == "" {
		unit = "×"
	}
	return fmt.Sprintf("| %s | %.3g%s | %s %.3g%s | %s |", g.What, g.Measured, unit, rel, g.Limit, unit, verdict)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }
