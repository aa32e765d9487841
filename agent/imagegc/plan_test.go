package imagegc

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"berth/internal/errdefs"
)

func TestPolicyValidate(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{DefaultPolicy(), ""},
		{Policy{HighThresholdPercent: 100, LowThresholdPercent: 100}, ""},
		{Policy{HighThresholdPercent: -1, LowThresholdPercent: 0}, "invalid HighThresholdPercent -1, must be in range [0-100]"},
		{Policy{HighThresholdPercent: 101, LowThresholdPercent: 0}, "invalid HighThresholdPercent 101, must be in range [0-100]"},
		{Policy{HighThresholdPercent: 50, LowThresholdPercent: -1}, "invalid LowThresholdPercent -1, must be in range [0-100]"},
		{Policy{HighThresholdPercent: 1, LowThresholdPercent: 2}, "LowThresholdPercent 2 can not be higher than HighThresholdPercent 1"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second}, "invalid MinAge -1s, must not be negative"},
	} {
		err := c.p.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.p, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

func TestBytesToFree(t *testing.T) {
	p := DefaultPolicy() // 85 / 80
	for _, c := range []struct {
		capacity, available int64
		toFree              int64
		usage               int
	}{
		{1000, 500, 0, 50},
		{1000, 151, 49, 85}, // 84.9% counts as 85 (upstream's integer arithmetic: 100 - 151*100/1000)
		{1000, 160, 0, 84},  // under the high threshold
		{1000, 150, 50, 85}, // at it: down to 80% used, 200 available
		{1000, 0, 200, 100},
		{1000, 2000, 0, 0}, // more available than capacity counts as empty
	} {
		toFree, usage, err := BytesToFree(p, c.capacity, c.available)
		if err != nil || toFree != c.toFree || usage != c.usage {
			t.Errorf("BytesToFree(%d, %d) = %d, %d%%, %v; want %d, %d%%", c.capacity, c.available, toFree, usage, err, c.toFree, c.usage)
		}
	}
	if _, _, err := BytesToFree(p, 0, 0); err == nil || !strings.Contains(err.Error(), "invalid capacity 0 on image filesystem") {
		t.Errorf("capacity 0: %v", err)
	}
}

func TestCandidatesOrderAndEligibility(t *testing.T) {
	now := time.Unix(10_000, 0)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	images := []Image{
		{ID: "in-use", FirstDetected: ago(time.Hour), LastUsed: now, InUse: true},
		{ID: "pinned", FirstDetected: ago(time.Hour), Pinned: true},
		{ID: "young", FirstDetected: ago(time.Minute)},
		{ID: "used-just-now", FirstDetected: ago(time.Hour), LastUsed: now},
		{ID: "used-10m-ago", FirstDetected: ago(time.Hour), LastUsed: ago(10 * time.Minute)},
		{ID: "used-1h-ago", FirstDetected: ago(2 * time.Hour), LastUsed: ago(time.Hour)},
		{ID: "never-used-new", FirstDetected: ago(5 * time.Minute)},
		{ID: "never-used-old", FirstDetected: ago(3 * time.Hour)},
		{ID: "exactly-min-age", FirstDetected: ago(2 * time.Minute)},
	}
	var got []string
	for _, im := range Candidates(images, now, 2*time.Minute) {
		got = append(got, im.ID)
	}
	want := "never-used-old,never-used-new,exactly-min-age,used-1h-ago,used-10m-ago"
	if fmt.Sprint(strings.Join(got, ",")) != want {
		t.Errorf("candidates %v\nwant %s", got, want)
	}
}
