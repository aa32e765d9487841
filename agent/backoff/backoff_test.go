package backoff

import (
	"errors"
	"testing"
	"time"

	"berth/internal/errdefs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A container that crashes right after each start: the delays before its
// restarts are 0, 10 s, 20 s, 40 s, … capped at 5 min.
func TestCrashLoopDelaysDoubleToMax(t *testing.T) {
	tr := New(DefaultPolicy())
	const key = "uid/app/1"
	now := t0
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i, w := range want {
		finished := now // it exits as soon as it starts
		delay, waiting := tr.InBackOff(key, finished, now)
		if w == 0 {
			if waiting {
				t.Fatalf("restart %d: in back-off (delay %s), want immediate", i, delay)
			}
		} else {
			if !waiting || delay != w {
				t.Fatalf("restart %d: waiting=%v delay=%s, want waiting %s", i, waiting, delay, w)
			}
			if _, still := tr.InBackOff(key, finished, now.Add(w-time.Millisecond)); !still {
				t.Fatalf("restart %d: allowed %s before the delay ended", i, time.Millisecond)
			}
			if _, still := tr.InBackOff(key, finished, now.Add(w)); still {
				t.Fatalf("restart %d: still waiting once %s passed", i, w)
			}
			if until, ok := tr.Until(key, finished); !ok || !until.Equal(finished.Add(w)) {
				t.Fatalf("restart %d: Until = %v %v, want %v", i, until, ok, finished.Add(w))
			}
			now = now.Add(w)
		}
		tr.Next(key, finished)
	}
}

func TestResetAfterLongRun(t *testing.T) {
	tests := []struct {
		name      string
		ranFor    time.Duration // between the previous exit and this one
		wantDelay time.Duration // recorded by Next for this exit
	}{
		{"short run keeps doubling", time.Minute, 20 * time.Second},
		{"exactly the window keeps doubling", 10 * time.Minute, 20 * time.Second},
		{"longer than the window resets", 10*time.Minute + time.Second, 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(DefaultPolicy())
			tr.Next("k", t0)
			second := t0.Add(tc.ranFor)
			if got := tr.Next("k", second); got != tc.wantDelay {
				t.Fatalf("Next = %s, want %s", got, tc.wantDelay)
			}
		})
	}
}

func TestExpiredHistoryIsNotABackOff(t *testing.T) {
	tr := New(DefaultPolicy())
	tr.Next("k", t0)
	later := t0.Add(11 * time.Minute)
	if _, waiting := tr.InBackOff("k", later, later); waiting {
		t.Fatal("a container whose previous exit is older than the reset window waits")
	}
	if _, ok := tr.Until("k", later); ok {
		t.Fatal("Until reports a wait for expired history")
	}
}

func TestKeysAreIndependentAndForgotten(t *testing.T) {
	tr := New(DefaultPolicy())
	tr.Next("a", t0)
	tr.Next("a", t0)
	if _, waiting := tr.InBackOff("b", t0, t0); waiting {
		t.Fatal("key b inherited key a's back-off")
	}
	tr.Forget("a")
	if _, waiting := tr.InBackOff("a", t0, t0); waiting {
		t.Fatal("forgotten key still backs off")
	}
}

func TestGCDropsExpired(t *testing.T) {
	tr := New(DefaultPolicy())
	tr.Next("old", t0)
	tr.Next("new", t0.Add(9*time.Minute))
	tr.GC(t0.Add(11 * time.Minute))
	if tr.Len() != 1 {
		t.Fatalf("Len after GC = %d, want 1", tr.Len())
	}
	if _, waiting := tr.InBackOff("new", t0.Add(9*time.Minute), t0.Add(9*time.Minute)); !waiting {
		t.Fatal("GC dropped a live key")
	}
}

func TestKeyChangesWithSpecHash(t *testing.T) {
	if Key("u", "c", 1) == Key("u", "c", 2) {
		t.Fatal("a changed spec must get a fresh back-off key")
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		ok   bool
	}{
		{"default", DefaultPolicy(), true},
		{"scaled for tests", Policy{Initial: 100 * time.Millisecond, Max: time.Second, ResetAfter: time.Minute}, true},
		{"zero initial", Policy{Max: time.Second, ResetAfter: time.Minute}, false},
		{"max below initial", Policy{Initial: time.Second, Max: time.Millisecond, ResetAfter: time.Minute}, false},
		{"zero reset", Policy{Initial: time.Second, Max: time.Second}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.ok != (err == nil) {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
		})
	}
}
