package node

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// kind is the type of an object a node may be related to.
type kind int

const (
	kindPod kind = iota
	kindSecret
	kindConfigMap
	kindClaim
	kindServiceAccount
)

// vertex names one namespaced object.
type vertex struct {
	kind      kind
	namespace string
	name      string
}

// podEntry remembers what one bound pod contributed, so removal undoes it.
type podEntry struct {
	node     string
	vertices []vertex
}

// pvEntry is what the graph knows about one PersistentVolume.
type pvEntry struct {
	claim   string   // bound claim as namespace/name, "" when unbound
	secrets []string // namespace/name
}

// Graph records which node may reach which object: a pod bound to a node
// makes the pod, and the secrets, configmaps, PVCs and service account it
// names, reachable from that node; a PV is reachable through its bound
// claim, and so are the secrets the PV names. It is safe for concurrent use.
type Graph struct {
	mu          sync.RWMutex
	pods        map[string]podEntry        // namespace/name → entry
	reach       map[vertex]map[string]int  // vertex → node → number of pods making it reachable
	pvs         map[string]pvEntry         // PV name → entry
	pvsBySecret map[string]map[string]bool // secret namespace/name → PV names
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{
		pods:        map[string]podEntry{},
		reach:       map[vertex]map[string]int{},
		pvs:         map[string]pvEntry{},
		pvsBySecret: map[string]map[string]bool{},
	}
}

// SetPod adds or replaces a pod. Pods not bound to a node contribute nothing.
func (g *Graph) SetPod(pod *corev1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removePodLocked(key)
	if pod.Spec.NodeName == "" {
		return
	}
	r := refsOf(pod)
	vs := []vertex{{kindPod, pod.Namespace, pod.Name}, {kindServiceAccount, pod.Namespace, r.serviceAccount}}
	for n := range r.secrets {
		vs = append(vs, vertex{kindSecret, pod.Namespace, n})
	}
	for n := range r.configMaps {
		vs = append(vs, vertex{kindConfigMap, pod.Namespace, n})
	}
	for n := range r.claims {
		vs = append(vs, vertex{kindClaim, pod.Namespace, n})
	}
	for _, v := range vs {
		m := g.reach[v]
		if m == nil {
			m = map[string]int{}
			g.reach[v] = m
		}
		m[pod.Spec.NodeName]++
	}
	g.pods[key] = podEntry{node: pod.Spec.NodeName, vertices: vs}
}

// DeletePod removes a pod by namespace and name.
func (g *Graph) DeletePod(namespace, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removePodLocked(namespace + "/" + name)
}

func (g *Graph) removePodLocked(key string) {
	e, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	for _, v := range e.vertices {
		m := g.reach[v]
		m[e.node]--
		if m[e.node] <= 0 {
			delete(m, e.node)
		}
		if len(m) == 0 {
			delete(g.reach, v)
		}
	}
}

// SetPV adds or replaces a PersistentVolume.
func (g *Graph) SetPV(pv *corev1.PersistentVolume) {
	e := pvEntry{secrets: pvSecrets(pv)}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.Name != "" {
		e.claim = ref.Namespace + "/" + ref.Name
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removePVLocked(pv.Name)
	g.pvs[pv.Name] = e
	for _, s := range e.secrets {
		if g.pvsBySecret[s] == nil {
			g.pvsBySecret[s] = map[string]bool{}
		}
		g.pvsBySecret[s][pv.Name] = true
	}
}

// DeletePV removes a PersistentVolume by name.
func (g *Graph) DeletePV(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removePVLocked(name)
}

func (g *Graph) removePVLocked(name string) {
	e, ok := g.pvs[name]
	if !ok {
		return
	}
	delete(g.pvs, name)
	for _, s := range e.secrets {
		delete(g.pvsBySecret[s], name)
		if len(g.pvsBySecret[s]) == 0 {
			delete(g.pvsBySecret, s)
		}
	}
}

// reachable reports whether node may reach the namespaced object.
func (g *Graph) reachable(node string, k kind, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.reach[vertex{k, namespace, name}][node] > 0 {
		return true
	}
	if k == kindSecret {
		for pv := range g.pvsBySecret[namespace+"/"+name] {
			if g.pvReachableLocked(node, pv) {
				return true
			}
		}
	}
	return false
}

// pvReachable reports whether node may read the PersistentVolume.
func (g *Graph) pvReachable(node, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.pvReachableLocked(node, name)
}

func (g *Graph) pvReachableLocked(node, name string) bool {
	e, ok := g.pvs[name]
	if !ok || e.claim == "" {
		return false
	}
	ns, claim, _ := cutKey(e.claim)
	return g.reach[vertex{kindClaim, ns, claim}][node] > 0
}

func cutKey(key string) (string, string, bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}
