// Package flowcontrol is berth's API Priority and Fairness: the request
// filter (k8s.io/apiserver's APF filter and config controller, which
// classify every authenticated request by the FlowSchemas, queue it in its
// PriorityLevelConfiguration, answer 429 when the level is full, set the
// X-Kubernetes-PF-FlowSchema-UID / -PriorityLevel-UID response headers and
// maintain the objects' status conditions) and the Ensurer, which keeps
// upstream's mandatory and suggested configuration objects
// (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap) in place.
package flowcontrol
