// Package certificatesigningrequest describes certificates.k8s.io/v1
// certificate signing requests to the registry: the requester's
// identity recorded on create, the spec immutable, /status (the signer's
// certificate and conditions) and /approval (Approved/Denied conditions)
// kept apart, and the table (NAME AGE SIGNERNAME REQUESTOR
// REQUESTEDDURATION CONDITION).
package certificatesigningrequest

import (
	"context"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

type csr = certificatesv1.CertificateSigningRequest

// Kind describes certificatesigningrequests: /status is the signer's (it
// sets status.certificate and conditions other than Approved and Denied).
var Kind = base.Kind[*csr]{
	APIVersion:    "certificates.k8s.io/v1",
	Status:        true,
	PrepareCreate: recordRequester,
	PrepareUpdate: func(to, from *csr) { to.Spec = from.Spec }, // the spec is immutable
	// the Approved/Denied conditions are kept, new conditions' times stamped
	PrepareStatusUpdate: func(n, o *csr) {
		n.Status.Conditions = stampConditions(keepApprovals(n.Status.Conditions, o.Status.Conditions), o.Status.Conditions)
	},
	StatusResets:         []string{"spec", "status.conditions"},
	Validate:             validation.ValidateCertificateSigningRequest,
	ValidateUpdate:       validation.ValidateCertificateSigningRequestUpdate,
	ValidateStatusUpdate: validation.ValidateCertificateSigningRequestStatusUpdate,
	Fields:               fieldsets.CertificateSigningRequest,
	Table:                table,
}

// ApprovalKind is Kind as /approval serves it, the approver's: it changes
// the conditions only (the certificate is kept, new conditions' times
// stamped).
var ApprovalKind = func() base.Kind[*csr] {
	k := Kind
	k.PrepareStatusUpdate = func(n, o *csr) {
		n.Status.Certificate = o.Status.Certificate
		n.Status.Conditions = stampConditions(n.Status.Conditions, o.Status.Conditions)
	}
	k.StatusResets = []string{"spec", "status.certificate"}
	return k
}()

// recordRequester records who asks: spec.username, uid, groups and extra
// come from the authenticated requester, never from the body.
func recordRequester(ctx context.Context, r *csr) {
	r.Spec.Username, r.Spec.UID, r.Spec.Groups, r.Spec.Extra = "", "", nil, nil
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		r.Spec.Username = u.GetName()
		r.Spec.UID = u.GetUID()
		r.Spec.Groups = append([]string(nil), u.GetGroups()...)
		if extra := u.GetExtra(); len(extra) > 0 {
			r.Spec.Extra = map[string]certificatesv1.ExtraValue{}
			for k, v := range extra {
				r.Spec.Extra[k] = append(certificatesv1.ExtraValue(nil), v...)
			}
		}
	}
}

// keepApprovals returns conds with the old Approved and Denied conditions:
// in place when conds has as many of them (upstream's
// preserveConditionInstances: the order the client sent stays), else
// (added or removed) conds without its own and the old ones after.
func keepApprovals(conds, old []certificatesv1.CertificateSigningRequestCondition) []certificatesv1.CertificateSigningRequestCondition {
	indices := func(list []certificatesv1.CertificateSigningRequestCondition, t certificatesv1.RequestConditionType) []int {
		var out []int
		for i, c := range list {
			if c.Type == t {
				out = append(out, i)
			}
		}
		return out
	}
	out := append([]certificatesv1.CertificateSigningRequestCondition(nil), conds...)
	inPlace := true
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		if len(indices(out, t)) != len(indices(old, t)) {
			inPlace = false
		}
	}
	if inPlace {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			for i, oi := range indices(old, t) {
				out[indices(out, t)[i]] = old[oi]
			}
		}
		return out
	}
	out = out[:0]
	for _, c := range conds {
		if !isApproval(c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range old {
		if isApproval(c.Type) {
			out = append(out, c)
		}
	}
	return out
}

func isApproval(t certificatesv1.RequestConditionType) bool {
	return t == certificatesv1.CertificateApproved || t == certificatesv1.CertificateDenied
}

// stampConditions sets lastUpdateTime (and lastTransitionTime, kept from
// the old condition when the status did not change) where they are unset.
func stampConditions(conds, old []certificatesv1.CertificateSigningRequestCondition) []certificatesv1.CertificateSigningRequestCondition {
	now := metav1.Now()
	for i := range conds {
		c := &conds[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
			for _, oc := range old {
				if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
					c.LastTransitionTime = oc.LastTransitionTime
				}
			}
		}
	}
	return conds
}

// table prints CSRs as kubectl get csr does.
var table = base.Table[*csr]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.AgeColumn,
		base.Col("SignerName", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
		base.Col("Requestor", "Name of the user which made this request."),
		base.Col("RequestedDuration", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
		base.Col("Condition", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
	},
	Row: func(r *csr, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		requested := "<none>"
		if r.Spec.ExpirationSeconds != nil {
			requested = duration.HumanDuration(time.Duration(*r.Spec.ExpirationSeconds) * time.Second)
		}
		return []interface{}{r.Name, base.Age(r.CreationTimestamp, now), r.Spec.SignerName, r.Spec.Username, requested, Condition(r)}, nil
	},
}

// Condition is the CONDITION cell: Pending, or the Approved/Denied/Failed
// conditions joined by commas, plus ",Issued" once a certificate is set.
func Condition(csr *certificatesv1.CertificateSigningRequest) string {
	var parts []string
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			parts = append(parts, string(c.Type))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "Pending")
	}
	if len(csr.Status.Certificate) > 0 {
		parts = append(parts, "Issued")
	}
	return strings.Join(parts, ",")
}
