package imagegc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
)

// DefaultPeriod is how often the collector runs, the kubelet's
// ImageGCPeriod.
const DefaultPeriod = 5 * time.Minute

// Runtime is the part of the CRI client the collector uses; *cri.Client
// implements it.
type Runtime interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	RemoveImage(ctx context.Context, image string) error
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// Config configures a Manager. Runtime and ImageFs are required.
type Config struct {
	Runtime Runtime
	// ImageFs returns the image filesystem's size and free bytes.
	ImageFs func(ctx context.Context) (capacity, available int64, err error)
	// Policy; zero is DefaultPolicy.
	Policy Policy
	// Pinned are image references (tags, digests or IDs) never removed,
	// besides those the runtime reports pinned and its sandbox image (from
	// containerd's verbose status).
	Pinned []string
	// Period is how often Run collects; default DefaultPeriod.
	Period time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger; default discards.
	Logger *slog.Logger
}

// Manager tracks when each image was first seen and last used, and removes
// unused images when the image filesystem is over the high threshold.
type Manager struct {
	cfg Config

	mu           sync.Mutex
	records      map[string]*record // by image ID
	sandboxImage string             // the runtime's, once known
}

type record struct{ firstDetected, lastUsed time.Time }

// New validates cfg and returns a manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Runtime == nil {
		return nil, fmt.Errorf("imagegc: Config.Runtime is required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.ImageFs == nil {
		return nil, fmt.Errorf("imagegc: Config.ImageFs is required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Policy == (Policy{}) {
		cfg.Policy = DefaultPolicy()
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("imagegc: %w", err)
	}
	if cfg.Period < 0 {
		return nil, fmt.Errorf("imagegc: Config.Period %s: must not be negative: %w", cfg.Period, errdefs.ErrInvalidArgument)
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, records: map[string]*record{}}, nil
}

// Run observes the images at once (so their ages count from the start) and
// collects every Period until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	if _, err := m.observe(ctx); err != nil && ctx.Err() == nil {
		m.cfg.Logger.Warn("listing images for garbage collection failed", "err", err)
	}
	t := time.NewTicker(m.cfg.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := m.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
				m.cfg.Logger.Warn("image garbage collection failed", "err", err)
			}
		}
	}
}

// GarbageCollect removes unused images when the image filesystem is at or
// over the high threshold, down to the low threshold. It fails, in
// upstream's words, when the eligible images do not free enough.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	images, err := m.observe(ctx)
	if err != nil {
		return err
	}
	capacity, available, err := m.cfg.ImageFs(ctx)
	if err != nil {
		return fmt.Errorf("imagegc: image filesystem: %w", err)
	}
	toFree, usage, err := BytesToFree(m.cfg.Policy, capacity, available)
	if err != nil || toFree <= 0 {
		return err
	}
	m.cfg.Logger.Info("disk usage on the image filesystem is over the high threshold, freeing down to the low threshold",
		"usage", usage, "highThreshold", m.cfg.Policy.HighThresholdPercent, "lowThreshold", m.cfg.Policy.LowThresholdPercent, "amountToFree", toFree)
	freed, err := m.free(ctx, images, toFree)
	if err != nil {
		return fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", toFree, freed, err)
	}
	if freed < toFree {
		return fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", toFree, freed)
	}
	return nil
}

// DeleteUnused removes every image eligible for collection (unused, not
// pinned, first seen at least MinAge ago) whatever the thresholds, as the
// kubelet's DeleteUnusedImages, which the eviction manager calls under
// disk pressure before it evicts pods.
func (m *Manager) DeleteUnused(ctx context.Context) error {
	images, err := m.observe(ctx)
	if err != nil {
		return err
	}
	_, err = m.free(ctx, images, math.MaxInt64)
	return err
}

// free removes candidates of images, in order, until toFree bytes are
// freed: the bytes freed and the removals that failed.
func (m *Manager) free(ctx context.Context, images []Image, toFree int64) (int64, error) {
	var freed int64
	var errs []error
	for _, im := range Candidates(images, m.cfg.Now(), m.cfg.Policy.MinAge) {
		if freed >= toFree {
			break
		}
		if err := m.cfg.Runtime.RemoveImage(ctx, im.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		m.cfg.Logger.Info("removed an image to free space", "image", im.ID, "size", im.Size)
		m.forget(im.ID)
		freed += im.Size
	}
	return freed, errors.Join(errs...)
}

// observe lists the images and the containers, records first sightings
// and uses, forgets images gone, and returns what it knows.
func (m *Manager) observe(ctx context.Context) ([]Image, error) {
	list, err := m.cfg.Runtime.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("imagegc: %w", err)
	}
	containers, err := m.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("imagegc: %w", err)
	}
	used := map[string]bool{} // image IDs and references of every container
	for _, c := range containers {
		used[c.GetImageRef()] = true
		used[c.GetImage().GetImage()] = true
	}
	pinned := map[string]bool{}
	for _, ref := range m.cfg.Pinned {
		pinned[ref] = true
	}
	if m.sandboxImage == "" {
		m.sandboxImage = m.runtimeSandboxImage(ctx)
	}
	pinned[m.sandboxImage] = m.sandboxImage != ""
	names := func(im *runtimeapi.Image) []string {
		return append(append([]string{im.GetId()}, im.GetRepoTags()...), im.GetRepoDigests()...)
	}
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	out := make([]Image, 0, len(list))
	for _, im := range list {
		id := im.GetId()
		seen[id] = true
		r := m.records[id]
		if r == nil {
			r = &record{firstDetected: now}
			m.records[id] = r
		}
		inUse := slices.ContainsFunc(names(im), func(n string) bool { return used[n] })
		if inUse {
			r.lastUsed = now
		}
		out = append(out, Image{
			ID: id, Size: int64(im.GetSize()), FirstDetected: r.firstDetected, LastUsed: r.lastUsed, InUse: inUse,
			Pinned: im.GetPinned() || slices.ContainsFunc(names(im), func(n string) bool { return pinned[n] }),
		})
	}
	for id := range m.records {
		if !seen[id] {
			delete(m.records, id)
		}
	}
	return out, nil
}

// runtimeSandboxImage is the sandbox image in the runtime's verbose status
// (containerd's CRI plugin config, "sandboxImage"); "" when it does not say.
func (m *Manager) runtimeSandboxImage(ctx context.Context) string {
	resp, err := m.cfg.Runtime.Status(ctx, true)
	if err != nil {
		return ""
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["config"]), &cfg); err != nil {
		return ""
	}
	return cfg.SandboxImage
}

func (m *Manager) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, id)
}
