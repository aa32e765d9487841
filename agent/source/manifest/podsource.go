package manifest

import (
	"context"

	"berth/agent/source"
)

// PodSource is a Source delivering to a Handler (source.PodSource): Add is
// Update, Remove is Remove, and Synced closes after the first scan.
type PodSource struct {
	src     *Source
	handler source.Handler
	synced  chan struct{}
}

var _ source.PodSource = (*PodSource)(nil)

// NewPodSource validates cfg and returns a source delivering to h; Run
// starts it.
func NewPodSource(cfg Config, h source.Handler) (*PodSource, error) {
	src, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &PodSource{src: src, handler: h, synced: make(chan struct{})}, nil
}

// Synced is closed once the first scan has been delivered.
func (p *PodSource) Synced() <-chan struct{} { return p.synced }

// Run follows the directory and delivers its pods until ctx ends.
func (p *PodSource) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- p.src.Run(ctx) }()
	log := p.src.cfg.Logger
	for ev := range p.src.Events() {
		switch ev.Op {
		case Add:
			log.Info("pod added", "pod", ev.Pod.Namespace+"/"+ev.Pod.Name, "uid", ev.Pod.UID, "file", ev.File)
			p.handler.Update(ev.Pod)
		case Remove:
			log.Info("pod removed", "pod", ev.Pod.Namespace+"/"+ev.Pod.Name, "uid", ev.Pod.UID, "file", ev.File)
			p.handler.Remove(ev.Pod)
		case Synced:
			close(p.synced)
		}
	}
	return <-errc
}
