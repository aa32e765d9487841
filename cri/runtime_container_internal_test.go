package cri

import (
	"testing"
	"time"
)

func TestSecondsRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want int64
	}{
		{0, 0}, {-time.Second, 0}, {time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {30 * time.Second, 30},
	} {
		if got := seconds(tc.in); got != tc.want {
			t.Errorf("seconds(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
