package scheduler

import (
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	fw "berth/controlplane/scheduler/framework"
	"berth/internal/errdefs"
)

// Cache is the scheduler's view of nodes and the pods assigned to them,
// fed by informer events, plus the pods it has assumed onto nodes while
// their bindings are in flight.
type Cache struct {
	mu    sync.Mutex
	nodes map[string]*fw.NodeInfo
	pods  map[types.UID]*cachedPod
	// dirty names the nodes changed since the last snapshot; nodesChanged
	// is set when a Node object (or the node set) changed.
	dirty        map[string]bool
	nodesChanged bool
	generation   int64
}

type cachedPod struct {
	info    *fw.PodInfo
	node    string
	assumed bool
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{nodes: map[string]*fw.NodeInfo{}, pods: map[types.UID]*cachedPod{}, dirty: map[string]bool{}}
}

func (c *Cache) touch(name string) {
	c.generation++
	if n := c.nodes[name]; n != nil {
		n.Generation = c.generation
	}
	c.dirty[name] = true
}

func (c *Cache) nodeInfo(name string) *fw.NodeInfo {
	n := c.nodes[name]
	if n == nil {
		n = fw.NewNodeInfo(nil)
		c.nodes[name] = n
	}
	return n
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodeInfo(node.Name).SetNode(node)
	c.nodesChanged = true
	c.touch(node.Name)
}

// RemoveNode removes a node; its pods stay accounted until they are
// removed.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[name]
	if n == nil {
		return
	}
	n.SetNode(nil)
	if len(n.Pods) == 0 {
		delete(c.nodes, name)
	}
	c.nodesChanged = true
	c.touch(name)
}

func newPodInfoLenient(pod *v1.Pod) *fw.PodInfo {
	pi, err := fw.NewPodInfo(pod)
	if err != nil {
		// An assigned pod with a malformed affinity still uses resources.
		return &fw.PodInfo{Pod: pod, Requests: fw.PodRequests(pod), NonZeroRequests: fw.PodNonZeroRequests(pod)}
	}
	return pi
}

func (c *Cache) addLocked(pod *v1.Pod, nodeName string, assumed bool) {
	pi := newPodInfoLenient(pod)
	c.nodeInfo(nodeName).AddPod(pi)
	c.pods[pod.UID] = &cachedPod{info: pi, node: nodeName, assumed: assumed}
	c.touch(nodeName)
}

func (c *Cache) removeLocked(uid types.UID) {
	cp := c.pods[uid]
	if cp == nil {
		return
	}
	delete(c.pods, uid)
	if n := c.nodes[cp.node]; n != nil {
		n.RemovePod(uid)
		c.touch(cp.node)
		if n.Node == nil && len(n.Pods) == 0 {
			delete(c.nodes, cp.node)
		}
	}
}

// AssumePod accounts pod (with spec.nodeName set) on its node before the
// binding is confirmed.
func (c *Cache) AssumePod(pod *v1.Pod) error {
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("assume pod %s/%s: spec.nodeName is empty: %w", pod.Namespace, pod.Name, errdefs.ErrInvalidArgument)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("assume pod %s/%s: already in the cache: %w", pod.Namespace, pod.Name, errdefs.ErrAlreadyExists)
	}
	c.addLocked(pod, pod.Spec.NodeName, true)
	return nil
}

// ForgetPod drops an assumed pod whose binding failed.
func (c *Cache) ForgetPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.pods[pod.UID]; cp != nil && cp.assumed {
		c.removeLocked(pod.UID)
	}
}

// IsAssumed reports whether the pod is assumed and not yet confirmed.
func (c *Cache) IsAssumed(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.pods[pod.UID]
	return cp != nil && cp.assumed
}

// Has reports whether the pod is in the cache, assumed or bound.
func (c *Cache) Has(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pods[pod.UID]
	return ok
}

// AddPod accounts an assigned pod seen by the informer, confirming it if it
// was assumed.
func (c *Cache) AddPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(pod.UID)
	c.addLocked(pod, pod.Spec.NodeName, false)
}

// UpdatePod replaces an assigned pod's object.
func (c *Cache) UpdatePod(pod *v1.Pod) { c.AddPod(pod) }

// RemovePod forgets an assigned pod.
func (c *Cache) RemovePod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(pod.UID)
}

// NodeCount returns how many nodes (with Node objects) the cache has.
func (c *Cache) NodeCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ni := range c.nodes {
		if ni.Node != nil {
			n++
		}
	}
	return n
}

// UpdateSnapshot brings snap up to date, cloning only the nodes changed
// since the last call; a snapshot is owned by one caller at a time.
func (c *Cache) UpdateSnapshot(snap *fw.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.nodesChanged && snap.Nodes != nil {
		for name := range c.dirty {
			if n := c.nodes[name]; n != nil && n.Node != nil {
				snap.Replace(n.Clone())
			}
		}
		clear(c.dirty)
		snap.RefreshAffinityLists()
		return
	}
	names := make([]string, 0, len(c.nodes))
	for name, n := range c.nodes {
		if n.Node != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	list := make([]*fw.NodeInfo, 0, len(names))
	for _, name := range names {
		if old := snap.Get(name); old != nil && !c.dirty[name] {
			list = append(list, old)
			continue
		}
		list = append(list, c.nodes[name].Clone())
	}
	snap.SetNodes(list)
	clear(c.dirty)
	c.nodesChanged = false
}
