// Package apiserver is the agent's pod source from the control plane: a
// client-go informer listing and watching only the pods bound to this node
// (field selector spec.nodeName=NODE), as the kubelet's apiserver source.
// Mirror pods (source.AnnotationMirror) are the agent's own
// reflections of static pods and are never run.
package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth/agent/source"
	"berth/internal/errdefs"
)

// Handler receives the node's pods; Remove is called when a pod is gone
// from the apiserver.
type Handler = source.Handler

// Config configures a Source. Client, NodeName and Handler are required.
type Config struct {
	Client   kubernetes.Interface
	NodeName string
	Handler  Handler
	// Resync re-delivers every pod; zero disables it.
	Resync time.Duration
	Logger *slog.Logger
}

// Source watches the node's pods.
type Source struct {
	cfg     Config
	factory informers.SharedInformerFactory
	lister  corelisters.PodLister
	synced  cache.InformerSynced
	// syncedCh closes once synced.
	syncedCh chan struct{}
}

// New validates cfg and prepares the informer (Run starts it).
func New(cfg Config) (*Source, error) {
	switch {
	case cfg.Client == nil:
		return nil, fmt.Errorf("apiserver source: Config.Client is required: %w", errdefs.ErrInvalidArgument)
	case cfg.NodeName == "":
		return nil, fmt.Errorf("apiserver source: Config.NodeName is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Handler == nil:
		return nil, fmt.Errorf("apiserver source: Config.Handler is required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	selector := fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, cfg.Resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = selector }))
	inf := factory.Core().V1().Pods()
	s := &Source{cfg: cfg, factory: factory, lister: inf.Lister(), syncedCh: make(chan struct{})}
	reg, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.update(obj) },
		UpdateFunc: func(_, obj any) { s.update(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok && !source.IsMirror(pod) {
				cfg.Handler.Remove(pod)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("apiserver source: %w", err)
	}
	s.synced = reg.HasSynced // the first list delivered to the handler, not only stored
	return s, nil
}

func (s *Source) update(obj any) {
	if pod, ok := obj.(*v1.Pod); ok && !source.IsMirror(pod) {
		s.cfg.Handler.Update(pod.DeepCopy())
	}
}

// Lister reads the informer's cache (mirror pods included).
func (s *Source) Lister() corelisters.PodLister { return s.lister }

// Synced is closed once the first list has been delivered to the Handler.
func (s *Source) Synced() <-chan struct{} { return s.syncedCh }

var _ source.PodSource = (*Source)(nil)

// Run runs the informer until ctx ends.
func (s *Source) Run(ctx context.Context) error {
	s.factory.Start(ctx.Done())
	if cache.WaitForCacheSync(ctx.Done(), s.synced) {
		close(s.syncedCh)
	}
	<-ctx.Done()
	s.factory.Shutdown()
	return nil
}
