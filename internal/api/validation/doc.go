// Package validation checks k8s.io/api objects the way kube-apiserver does:
// the same rules, the same field paths, the same error types and messages
// in a field.ErrorList, so clients (kubectl, client-go) see the errors they
// would see from Kubernetes. Objects are validated after defaulting
// (berth/internal/api/defaults), as upstream validates them.
package validation
