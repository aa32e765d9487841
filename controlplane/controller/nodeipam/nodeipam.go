// Package nodeipam gives every Node a pod subnet from the cluster CIDR
// (upstream's range allocator): spec.podCIDR and spec.podCIDRs are set once
// on a node that has none, subnets are never handed out twice, and a
// deleted node's subnet becomes free again.
package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// Name is the controller's name.
const Name = "nodeipam"

// Defaults of Options (kube-controller-manager's --cluster-cidr example and
// --node-cidr-mask-size).
const (
	DefaultClusterCIDR      = "10.244.0.0/16"
	DefaultNodeCIDRMaskSize = 24
)

// Options are the nodeipam settings.
type Options struct {
	// ClusterCIDR is the IPv4 range node subnets come from; default
	// DefaultClusterCIDR.
	ClusterCIDR string
	// NodeCIDRMaskSize is each node's prefix length; default 24.
	NodeCIDRMaskSize int
}

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.ClusterCIDR == "" {
		o.ClusterCIDR = DefaultClusterCIDR
	}
	if o.NodeCIDRMaskSize == 0 {
		o.NodeCIDRMaskSize = DefaultNodeCIDRMaskSize
	}
	_, cidr, err := net.ParseCIDR(o.ClusterCIDR)
	if err != nil {
		return fmt.Errorf("nodeipam: cluster CIDR %q: %v: %w", o.ClusterCIDR, err, errdefs.ErrInvalidArgument)
	}
	if _, err := NewCIDRSet(cidr, o.NodeCIDRMaskSize); err != nil {
		return fmt.Errorf("nodeipam: %w", err)
	}
	return nil
}

// Config configures the controller.
type Config struct {
	controller.Config
	Options
}

// Controller allocates node pod CIDRs.
type Controller struct {
	cfg    Config
	lister corelisters.NodeLister
	queue  *controller.Queue

	mu        sync.Mutex
	set       *CIDRSet
	byNode    map[string]*net.IPNet // what this controller accounts to each node
	bootstrap sync.Once
}

// New validates cfg and registers the Node informer.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Config.Validate(Name, 1); err != nil {
		return nil, err
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	_, cidr, _ := net.ParseCIDR(cfg.ClusterCIDR)
	set, _ := NewCIDRSet(cidr, cfg.NodeCIDRMaskSize)
	inf := cfg.Informers.Core().V1().Nodes()
	cfg.Workers = 1 // the allocator is a single ordered state
	c := &Controller{cfg: cfg, lister: inf.Lister(), queue: controller.NewQueue(Name, &cfg.Config), set: set, byNode: map[string]*net.IPNet{}}
	if err := c.queue.Watch(inf.Informer(), controller.On(controller.AllEvents, c.queue.Enqueue)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run allocates until ctx ends, with one worker whatever Config.Workers
// says: the allocator is a single ordered state.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

// occupyExisting records the subnets nodes already have, before the first
// allocation, so nothing is handed out twice after a restart.
func (c *Controller) occupyExisting() {
	nodes, _ := c.lister.List(labels.Everything())
	for _, n := range nodes {
		if cidr := nodeCIDR(n); cidr != nil {
			if err := c.set.Occupy(cidr); err == nil {
				c.byNode[n.Name] = cidr
			} else {
				c.cfg.Logger.Warn("node has a pod CIDR this controller cannot account", "node", n.Name, "cidr", cidr, "err", err)
			}
		}
	}
}

func nodeCIDR(n *corev1.Node) *net.IPNet {
	s := n.Spec.PodCIDR
	if s == "" && len(n.Spec.PodCIDRs) > 0 {
		s = n.Spec.PodCIDRs[0]
	}
	if s == "" {
		return nil
	}
	_, cidr, err := net.ParseCIDR(s)
	if err != nil {
		return nil
	}
	return cidr
}

func (c *Controller) sync(ctx context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bootstrap.Do(c.occupyExisting)
	node, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		if cidr, ok := c.byNode[name]; ok {
			c.set.Release(cidr)
			delete(c.byNode, name)
			c.cfg.Logger.Info("released node pod CIDR", "node", name, "cidr", cidr)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if cidr := nodeCIDR(node); cidr != nil {
		if have, ok := c.byNode[name]; !ok {
			if err := c.set.Occupy(cidr); err == nil {
				c.byNode[name] = cidr
			}
		} else if have.String() != cidr.String() {
			c.set.Release(have)
			delete(c.byNode, name)
			if c.set.Occupy(cidr) == nil {
				c.byNode[name] = cidr
			}
		}
		return nil
	}
	cidr, ok := c.byNode[name]
	if !ok {
		if cidr, err = c.set.Allocate(); err != nil {
			c.cfg.Recorder.Eventf(node, corev1.EventTypeWarning, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", name)
			return err
		}
		c.byNode[name] = cidr
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": node.UID},
		"spec":     map[string]any{"podCIDR": cidr.String(), "podCIDRs": []string{cidr.String()}},
	})
	_, err = c.cfg.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			c.set.Release(cidr)
			delete(c.byNode, name)
		}
		return fmt.Errorf("set pod CIDR %s on node %s: %w", cidr, name, errors.Join(err))
	}
	c.cfg.Recorder.Eventf(node, corev1.EventTypeNormal, "CIDRAssignmentSucceeded", "Node %s got pod CIDR %s", name, cidr)
	c.cfg.Logger.Info("allocated node pod CIDR", "node", name, "cidr", cidr)
	return nil
}
