// Package mirror keeps the mirror pods of the agent's static pods in the
// apiserver, as the kubelet does: for each static pod a pod of the same
// namespace and name, bound to the node, annotated
// kubernetes.io/config.mirror=<the static pod's config hash> and owned by the
// Node; a mirror pod whose hash no longer matches (the manifest changed) or
// whose static pod is gone is deleted (precondition: its UID), and a deleted
// one is recreated.
package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/agent/source"
	"berth/internal/errdefs"
)

// Annotations of static and mirror pods, the kubelet's.
const (
	AnnotationMirror     = source.AnnotationMirror
	AnnotationConfigHash = source.AnnotationConfigHash
)

// DefaultPeriod is how often the mirror pods are reconciled.
const DefaultPeriod = time.Second

// Config configures a Manager. Client, NodeName and Pods are required.
type Config struct {
	Client   kubernetes.Interface
	NodeName string
	// Pods reads the node's pods in the apiserver (the pod source's
	// informer cache).
	Pods   corelisters.PodLister
	Period time.Duration
	Logger *slog.Logger
}

// Manager reconciles the mirror pods with the static pods it is given.
type Manager struct {
	cfg Config

	mu     sync.Mutex
	static map[types.UID]*v1.Pod
}

// New validates cfg.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.Client == nil:
		return nil, fmt.Errorf("mirror: Config.Client is required: %w", errdefs.ErrInvalidArgument)
	case cfg.NodeName == "":
		return nil, fmt.Errorf("mirror: Config.NodeName is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Pods == nil:
		return nil, fmt.Errorf("mirror: Config.Pods is required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, static: map[types.UID]*v1.Pod{}}, nil
}

// Set adds or updates a static pod.
func (m *Manager) Set(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.static[pod.UID] = pod
}

// Unset removes a static pod.
func (m *Manager) Unset(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.static, uid)
}

// Run reconciles every Period until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			m.Reconcile(ctx)
		}
	}
}

// Reconcile creates the missing mirror pods and deletes the stale ones.
func (m *Manager) Reconcile(ctx context.Context) {
	log := m.cfg.Logger
	want := map[string]*v1.Pod{} // namespace/name → static pod
	m.mu.Lock()
	for _, p := range m.static {
		want[p.Namespace+"/"+p.Name] = p
	}
	m.mu.Unlock()
	existing, err := m.cfg.Pods.List(labels.Everything())
	if err != nil {
		return
	}
	have := map[string]*v1.Pod{}
	for _, p := range existing {
		if _, ok := p.Annotations[AnnotationMirror]; !ok {
			continue
		}
		key := p.Namespace + "/" + p.Name
		static := want[key]
		if static != nil && p.Annotations[AnnotationMirror] == static.Annotations[AnnotationConfigHash] && p.DeletionTimestamp == nil {
			have[key] = p
			continue
		}
		if p.DeletionTimestamp != nil && static == nil {
			continue // already going
		}
		uid := p.UID
		err := m.cfg.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			log.Warn("deleting a stale mirror pod failed", "pod", key, "err", err)
		} else {
			log.Info("deleted a stale mirror pod", "pod", key)
		}
	}
	for key, static := range want {
		if have[key] != nil {
			continue
		}
		if _, err := m.cfg.Pods.Pods(static.Namespace).Get(static.Name); err == nil {
			continue // a pod of that name exists (being deleted, or not a mirror): wait
		}
		if err := m.create(ctx, static); err != nil && !apierrors.IsAlreadyExists(err) {
			log.Warn("creating the mirror pod failed", "pod", key, "err", err)
		}
	}
}

// create creates static's mirror pod, owned by the Node.
func (m *Manager) create(ctx context.Context, static *v1.Pod) error {
	node, err := m.cfg.Client.CoreV1().Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node: %w", err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: static.Name, Namespace: static.Namespace,
			Labels:      static.Labels,
			Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: new(true),
			}},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	for k, v := range static.Annotations {
		pod.Annotations[k] = v
	}
	pod.Annotations[AnnotationMirror] = static.Annotations[AnnotationConfigHash]
	pod.Spec.NodeName = m.cfg.NodeName
	_, err = m.cfg.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err == nil {
		m.cfg.Logger.Info("created the mirror pod", "pod", pod.Namespace+"/"+pod.Name)
	}
	return err
}
