package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}, {0.1, 1}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("percentile of one = %v, want 7", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of none = %v, want 0", got)
	}
	if ds[0] != 100 {
		t.Error("percentile sorted its input in place")
	}
}

func TestSpread(t *testing.T) {
	if s := spreadOf([]float64{3, 1, 2}); s != (spread{1, 2, 3}) {
		t.Errorf("spreadOf(3,1,2) = %+v", s)
	}
	if s := spreadOf([]float64{4, 1, 2, 3}); s != (spread{1, 2.5, 4}) {
		t.Errorf("spreadOf(4,1,2,3) = %+v", s)
	}
	if got := fmtSpread(spread{1, 2, 3}, "%.0f ms"); got != "2 ms (1 ms–3 ms)" {
		t.Errorf("fmtSpread = %q", got)
	}
	if got := fmtSpread(spread{2, 2, 2}, "%.0f"); got != "2" {
		t.Errorf("fmtSpread of one = %q", got)
	}
}

func TestGoal(t *testing.T) {
	if !(goal{Measured: 0.5, Limit: 0.6}).Met() || (goal{Measured: 0.7, Limit: 0.6}).Met() {
		t.Error("an at-most goal")
	}
	if !(goal{Measured: 2.5, Limit: 2, AtLeast: true}).Met() || (goal{Measured: 1.5, Limit: 2, AtLeast: true}).Met() {
		t.Error("an at-least goal")
	}
}
