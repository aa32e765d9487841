package certificates

import (
	"crypto/x509"
	"fmt"
	"net"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
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

// Approve decides on a pending request, given its parsed request and the
// requester's Node (nil when absent; only serving requests need it).
// Requests it does not approve are left for a person, never denied.
func Approve(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, node *corev1.Node) Decision {
	requester, groups := csr.Spec.Username, csr.Spec.Groups
	switch csr.Spec.SignerName {
	case KubeletClientSigner:
		name, err := CheckKubeletClient(req, csr.Spec.Usages)
		if err != nil {
			return Decision{Message: "not a kubelet client certificate request: " + err.Error()}
		}
		if requester == NodeUserPrefix+name && slices.Contains(groups, NodesGroup) {
			return Decision{Approve: true, Reason: ApprovedReason, Message: "Auto approving self kubelet client certificate (renewal by the node)."}
		}
		if slices.Contains(groups, BootstrappersGroup) {
			return Decision{Approve: true, Reason: ApprovedReason, Message: "Auto approving kubelet client certificate requested with the join token."}
		}
		return Decision{Message: fmt.Sprintf("requester %q is neither the join-token identity nor node %q", requester, name)}
	case KubeletServingSigner:
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
	return Decision{Message: fmt.Sprintf("signer %q is not auto-approved", csr.Spec.SignerName)}
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
