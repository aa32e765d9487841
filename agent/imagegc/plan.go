// Package imagegc removes unused images when the image filesystem fills up,
// as the kubelet's image garbage collector: once usage reaches
// HighThresholdPercent, the images no container uses, that are not pinned
// and that were first seen at least MinAge ago are removed — least recently
// used first, then oldest — until usage is down to LowThresholdPercent.
//
// The decisions (how much to free, which images in which order) are pure
// functions; Manager observes the runtime over CRI and carries them out.
package imagegc

import (
	"fmt"
	"sort"
	"time"

	"berth/internal/errdefs"
)

// Policy is the kubelet's image GC policy.
type Policy struct {
	// HighThresholdPercent is the image filesystem usage at which
	// collection starts (the kubelet's imageGCHighThresholdPercent, 85);
	// 100 disables collection.
	HighThresholdPercent int
	// LowThresholdPercent is the usage collection frees down to
	// (imageGCLowThresholdPercent, 80).
	LowThresholdPercent int
	// MinAge is how long an image must have been seen before it may be
	// removed (imageMinimumGCAge, 2m).
	MinAge time.Duration
}

// DefaultPolicy is the kubelet's.
func DefaultPolicy() Policy {
	return Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
}

// Validate checks p in upstream's words.
func (p Policy) Validate() error {
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf("invalid HighThresholdPercent %d, must be in range [0-100]: %w", p.HighThresholdPercent, errdefs.ErrInvalidArgument)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf("invalid LowThresholdPercent %d, must be in range [0-100]: %w", p.LowThresholdPercent, errdefs.ErrInvalidArgument)
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return fmt.Errorf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d: %w", p.LowThresholdPercent, p.HighThresholdPercent, errdefs.ErrInvalidArgument)
	case p.MinAge < 0:
		return fmt.Errorf("invalid MinAge %s, must not be negative: %w", p.MinAge, errdefs.ErrInvalidArgument)
	}
	return nil
}

// BytesToFree is how many bytes must go to bring the image filesystem from
// its usage down to the low threshold: 0 while usage is under the high
// threshold. usage is the filesystem's usage in percent.
func BytesToFree(p Policy, capacity, available int64) (toFree int64, usage int, err error) {
	if capacity <= 0 {
		return 0, 0, fmt.Errorf("invalid capacity %d on image filesystem: %w", capacity, errdefs.ErrInvalidArgument)
	}
	available = min(available, capacity)
	usage = 100 - int(available*100/capacity)
	if usage < p.HighThresholdPercent {
		return 0, usage, nil
	}
	return capacity*int64(100-p.LowThresholdPercent)/100 - available, usage, nil
}

// Image is what the collector knows of an image.
type Image struct {
	ID   string
	Size int64
	// FirstDetected is when the collector first saw it; LastUsed when a
	// container last used it (zero if none did).
	FirstDetected, LastUsed time.Time
	// InUse: a container (in any state) uses it. Pinned: the runtime or
	// the agent (the sandbox image) keeps it.
	InUse, Pinned bool
}

// Candidates returns the images that may be removed at now, in the order
// to remove them: not in use, not pinned, used before now and first seen at
// least minAge ago; least recently used first, then first detected first.
func Candidates(images []Image, now time.Time, minAge time.Duration) []Image {
	var out []Image
	for _, im := range images {
		if im.InUse || im.Pinned || !im.LastUsed.Before(now) || now.Sub(im.FirstDetected) < minAge {
			continue
		}
		out = append(out, im)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.LastUsed.Equal(b.LastUsed) {
			return a.LastUsed.Before(b.LastUsed)
		}
		if !a.FirstDetected.Equal(b.FirstDetected) {
			return a.FirstDetected.Before(b.FirstDetected)
		}
		return a.ID < b.ID
	})
	return out
}
