package certificates

import (
	"crypto/x509"
	"fmt"
	"net"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

// Decision is the approver's verdict on one pending request.
type Decision struct {
	// Approve is true when the request is to be approved.
	Approve bool
	// Reason and Message go on the Approved condition; when Approve is
	// false Message says why the request is left alone.
	Reason, Message string
}

// ApprovedReason is the Approved condition's reason, as upstream.
const ApprovedReason = "AutoApproved"

// AccessCheck is a permission that gets a request approved: when a
// SubjectAccessReview for the requester (user, uid, groups and extra of
// the request's spec) allows Attributes, the request is approved with
// Message.
type AccessCheck struct {
	Attributes authorizationv1.ResourceAttributes
	Message    string
}

// Subresources of certificatesigningrequests whose "create" permission
// approves node client requests, as upstream's csrapproving controller.
const (
	// SelfNodeClientSubresource: a node renewing its own client
	// certificate (the subject's CN is the requester's user name).
	SelfNodeClientSubresource = "selfnodeclient"
	// NodeClientSubresource: a client certificate for any node (a new
	// node's, requested with a bootstrap token).
	NodeClientSubresource = "nodeclient"
)

// NodeClientChecks recognizes a kube-apiserver-client-kubelet request and
// returns the permissions to ask for, in order: selfnodeclient when the
// requester asks for its own name, then nodeclient. A request breaking
// the signer's rules gets an error (and is left pending).
func NodeClientChecks(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) ([]AccessCheck, error) {
	if csr.Spec.SignerName != KubeletClientSigner {
		return nil, fmt.Errorf("signer %q is not %q: %w", csr.Spec.SignerName, KubeletClientSigner, errdefs.ErrInvalidArgument)
	}
	if _, err := CheckKubeletClient(req, csr.Spec.Usages); err != nil {
		return nil, fmt.Errorf("not a kubelet client certificate request: %w", err)
	}
	check := func(sub, msg string) AccessCheck {
		return AccessCheck{Message: msg, Attributes: authorizationv1.ResourceAttributes{
			Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: sub, Verb: "create"}}
	}
	var checks []AccessCheck
	if csr.Spec.Username == req.Subject.CommonName {
		checks = append(checks, check(SelfNodeClientSubresource, "Auto approving self kubelet client certificate after SubjectAccessReview."))
	}
	return append(checks, check(NodeClientSubresource, "Auto approving kubelet client certificate after SubjectAccessReview.")), nil
}

// ApproveServing decides on a pending kubelet-serving request, given its
// parsed request and the requester's Node (nil when absent). Requests it
// does not approve are left for a person, never denied.
func ApproveServing(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, node *corev1.Node) Decision {
	requester, groups := csr.Spec.Username, csr.Spec.Groups
	if csr.Spec.SignerName != KubeletServingSigner {
		return Decision{Message: fmt.Sprintf("signer %q is not %q", csr.Spec.SignerName, KubeletServingSigner)}
	}
	name, err := CheckKubeletServing(req, csr.Spec.Usages)
	if err != nil {
		return Decision{Message: "not a kubelet serving certificate request: " + err.Error()}
	}
	if requester != NodeUserPrefix+name || !slices.Contains(groups, NodesGroup) {
		return Decision{Message: fmt.Sprintf("requester %q is not node %q", requester, name)}
	}
	if node == nil || node.Name != name {
		return Decision{Message: fmt.Sprintf("node %q is not registered", name)}
	}
	if err := sansAreNodes(req, node); err != nil {
		return Decision{Message: err.Error()}
	}
	return Decision{Approve: true, Reason: ApprovedReason, Message: "Auto approving kubelet serving certificate for the node's own name and addresses."}
}

// sansAreNodes requires every DNS name to be the node's name or one of its
// hostname/DNS addresses, and every IP one of its IP addresses.
func sansAreNodes(req *x509.CertificateRequest, node *corev1.Node) error {
	names := []string{node.Name}
	var ips []net.IP
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			names = append(names, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	for _, d := range req.DNSNames {
		if !slices.Contains(names, d) {
			return fmt.Errorf("DNS name %q is not one of node %q's names %v", d, node.Name, names)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return fmt.Errorf("IP %s is not one of node %q's addresses", ip, node.Name)
		}
	}
	return nil
}
