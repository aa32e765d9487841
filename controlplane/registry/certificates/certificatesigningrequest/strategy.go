// Package certificatesigningrequest is the registry strategy for
// certificates.k8s.io/v1 certificate signing requests: the requester's
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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the certificatesigningrequests strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the certificatesigningrequests strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.Reset = base.Reset("certificates.k8s.io/v1", "status")
	return s
}

// PrepareForCreate clears the status and records who asks: spec.username,
// uid, groups and extra come from the authenticated requester, never
// from the body.
func (Strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		csr.Spec.Username = u.GetName()
		csr.Spec.UID = u.GetUID()
		csr.Spec.Groups = append([]string(nil), u.GetGroups()...)
		if extra := u.GetExtra(); len(extra) > 0 {
			csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
			for k, v := range extra {
				csr.Spec.Extra[k] = append(certificatesv1.ExtraValue(nil), v...)
			}
		}
	}
}

// PrepareForUpdate keeps the stored spec and status: neither changes
// through the main resource.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	n.Spec, n.Status = o.Spec, o.Status
}

// Validate validates a new CSR.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateCertificateSigningRequest(obj.(*certificatesv1.CertificateSigningRequest))
}

// ValidateUpdate validates a CSR update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateCertificateSigningRequestUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}

// StatusStrategy is the certificatesigningrequests/status strategy, the
// signer's: it sets status.certificate and conditions other than Approved
// and Denied.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the certificatesigningrequests/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("certificates.k8s.io/v1", "spec", "status.conditions")
	return s
}

// PrepareForUpdate keeps the spec and the Approved/Denied conditions, and
// stamps new conditions' times.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	n.Spec = o.Spec
	n.Status.Conditions = stampConditions(keepApprovals(n.Status.Conditions, o.Status.Conditions), o.Status.Conditions)
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

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateCertificateSigningRequestStatusUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}

// ApprovalStrategy is the certificatesigningrequests/approval strategy,
// the approver's: it changes the conditions only.
type ApprovalStrategy struct{ Strategy }

// NewApprovalStrategy returns the certificatesigningrequests/approval strategy.
func NewApprovalStrategy(typer runtime.ObjectTyper) ApprovalStrategy {
	s := ApprovalStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("certificates.k8s.io/v1", "spec", "status.certificate")
	return s
}

// PrepareForUpdate keeps the spec and the certificate, and stamps new
// conditions' times.
func (ApprovalStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	n.Spec = o.Spec
	n.Status.Certificate = o.Status.Certificate
	n.Status.Conditions = stampConditions(n.Status.Conditions, o.Status.Conditions)
}

// ValidateUpdate validates the new conditions.
func (ApprovalStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateCertificateSigningRequestStatusUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
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

// GetAttrs returns a CSR's labels and fields (metadata.name, spec.signerName).
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set {
	return fieldsets.CertificateSigningRequest(o.(*certificatesv1.CertificateSigningRequest))
})

// Predicate matches CSRs against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints CSRs as kubectl get csr does.
var Table = base.Table[*certificatesv1.CertificateSigningRequest]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.AgeColumn,
		base.Col("SignerName", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
		base.Col("Requestor", "Name of the user which made this request."),
		base.Col("RequestedDuration", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
		base.Col("Condition", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
	},
	Row: func(csr *certificatesv1.CertificateSigningRequest, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		requested := "<none>"
		if csr.Spec.ExpirationSeconds != nil {
			requested = duration.HumanDuration(time.Duration(*csr.Spec.ExpirationSeconds) * time.Second)
		}
		return []interface{}{csr.Name, base.Age(csr.CreationTimestamp, now), csr.Spec.SignerName, csr.Spec.Username, requested, Condition(csr)}, nil
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
