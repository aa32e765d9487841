package node

// Reachable exposes the graph query to the external tests.
func Reachable(g *Graph, nodeName, resource, namespace, name string) bool {
	k := map[string]kind{"pods": kindPod, "secrets": kindSecret, "configmaps": kindConfigMap,
		"persistentvolumeclaims": kindClaim, "serviceaccounts": kindServiceAccount}[resource]
	return g.reachable(nodeName, k, namespace, name)
}
