// Package certificates approves and signs certificates.k8s.io/v1
// CertificateSigningRequests for node agents, as kube-controller-manager's
// csrapproving and csrsigning controllers do for kubelet TLS bootstrap.
//
// Approval:
//
//   - kubernetes.io/kube-apiserver-client-kubelet: a request whose subject
//     is CN=system:node:NAME, O=system:nodes, with no SANs and usages
//     "digital signature" and "client auth" (optionally "key
//     encipherment"), is approved when authorization allows its requester
//     (the user, uid, groups and extra of the request's spec) to create
//     certificatesigningrequests/selfnodeclient (asked only when the CN is
//     the requester's user name: a node renewing its own certificate) or
//     certificatesigningrequests/nodeclient (a new node's certificate,
//     requested with a bootstrap token), each asked as a
//     SubjectAccessReview, as upstream's csrapproving controller. The
//     default policy grants the former to system:nodes and the latter to
//     system:bootstrappers (controlplane/authorization/rbac/bootstrap). A
//     request no review allows is left pending, not denied, and asked
//     about again at the next resync or change.
//   - kubernetes.io/kubelet-serving (ApproveServing, pure):
//     CN=system:node:NAME, O=system:nodes, usages "digital signature" and
//     "server auth" (optionally "key encipherment"), DNS or IP SANs and no
//     others. Upstream never
//     auto-approves these; berth approves them when the requester is the
//     node itself and every DNS name and IP is the node's name or one of
//     the addresses in its Node's status.
//   - anything else is left for a person (kubectl certificate approve).
//
// Signing (Signer): approved requests for those two signers are signed
// with the cluster CA: the subject and SANs of the request, the requested
// usages, valid from 5 minutes ago until the earlier of
// spec.expirationSeconds (at least 10 minutes), Config.MaxDuration (one
// year by default) and the CA's own expiry. A request that does not meet
// its signer's rules gets the Failed condition (reason
// SignerValidationFailure) instead of a certificate.
//
// The Controller watches CSRs and applies both. It is idempotent (each
// write carries the resourceVersion it decided on, so two servers racing
// lose nothing but a 409), so every berth server runs it without leader
// election.
package certificates
