// Package source is the contract of the agent's pod sources — the static-pod
// manifest directory (manifest) and the apiserver's pods bound to the node
// (apiserver) — and the kubelet's annotations that say where a pod came
// from, defined here once.
package source

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's annotations of static and mirror pods.
const (
	// AnnotationMirror marks a mirror pod (the apiserver's copy of a
	// static pod); its value is the static pod's config hash.
	AnnotationMirror = "kubernetes.io/config.mirror"
	// AnnotationConfigHash is a static pod's hash of its manifest.
	AnnotationConfigHash = "kubernetes.io/config.hash"
	// AnnotationConfigSource is where a pod came from: "file" or "api".
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationConfigSeen is when the agent first saw a static pod.
	AnnotationConfigSeen = "kubernetes.io/config.seen"
)

// IsMirror reports whether pod is a mirror pod.
func IsMirror(pod *v1.Pod) bool {
	_, ok := pod.Annotations[AnnotationMirror]
	return ok
}

// IsStatic reports whether pod came from somewhere else than the apiserver
// (its config source is not "api").
func IsStatic(pod *v1.Pod) bool {
	src, ok := pod.Annotations[AnnotationConfigSource]
	return ok && src != "api"
}

// Handler receives the pods of a source. Calls are serial; they must not
// block for long.
type Handler interface {
	// Update is called with every new or changed pod (including pods whose
	// deletionTimestamp is set).
	Update(pod *v1.Pod)
	// Remove is called when the source no longer wants the pod.
	Remove(pod *v1.Pod)
}

// PodSource delivers the pods it wants run on the node to its Handler.
type PodSource interface {
	// Run delivers pods until ctx ends.
	Run(ctx context.Context) error
	// Synced is closed once the source delivered its first complete list:
	// every pod it wants then has been delivered.
	Synced() <-chan struct{}
}
