// Package certificates approves and signs certificates.k8s.io/v1
// CertificateSigningRequests for node agents, as kube-controller-manager's
// csrapproving and csrsigning controllers do for kubelet TLS bootstrap.
//
// Approval (Approve, pure):
//
//   - kubernetes.io/kube-apiserver-client-kubelet: a request whose subject
//     is CN=system:node:NAME, O=system:nodes, with no SANs and usages
//     "digital signature" and "client auth" (optionally "key
//     encipherment"), is approved when the requester is the join-token
//     identity (group system:bootstrappers: a first credential) or the
//     node itself (user system:node:NAME: a renewal). Upstream asks a
//     SubjectAccessReview for certificatesigningrequests/nodeclient and
//     /selfnodeclient; berth, whose authorization lets any authenticated
//     caller through, decides by those identities instead.
//   - kubernetes.io/kubelet-serving: CN=system:node:NAME, O=system:nodes,
//     usages "digital signature" and "server auth" (optionally "key
//     encipherment"), DNS or IP SANs and no others. Upstream never
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
