// Package defaults fills in the fields of k8s.io/api objects that upstream
// Kubernetes defaults when an object is decoded (the SetDefaults_* functions
// of kube-apiserver's versioned API packages), so that berth's apiserver and
// agent see the same objects a kube-apiserver would store.
//
// Every function is idempotent: applying it twice changes nothing the second
// time. The scheme package installs them as the scheme's defaulting funcs.
package defaults
