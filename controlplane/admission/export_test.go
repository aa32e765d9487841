package admission

// LockedNamespaces is how many namespaces have a charge lock (those with a
// charge in flight) and how many quotas the plugin remembers writing.
func (r *ResourceQuota) LockedNamespaces() (locks, written int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.locks), len(r.written)
}
