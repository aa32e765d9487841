package validation

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// minCSRExpirationSeconds is the smallest spec.expirationSeconds upstream
// accepts (10 minutes).
const minCSRExpirationSeconds = 600

// knownKeyUsages are the key usages a CSR may request.
var knownKeyUsages = sets.New[string](
	"signing", "digital signature", "content commitment", "key encipherment", "key agreement",
	"data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
	"server auth", "client auth", "code signing", "email protection", "s/mime", "ipsec end system",
	"ipsec tunnel", "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc",
)

// ParseCSR decodes a PEM "CERTIFICATE REQUEST" block and checks its
// signature.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("PEM block type must be CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, err
	}
	return csr, nil
}

// ValidateCertificateSigningRequest validates a new CSR as upstream: a
// parseable, signed PEM request; a qualified signerName; known, unique
// usages; expirationSeconds of at least 600; valid status conditions.
func ValidateCertificateSigningRequest(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&csr.ObjectMeta, false, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	if _, err := ParseCSR(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(specPath.Child("request"), csr.Spec.Request, fmt.Sprintf("%v", err)))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(specPath.Child("usages"), ""))
	}
	seen := sets.New[string]()
	for i, u := range csr.Spec.Usages {
		p := specPath.Child("usages").Index(i)
		if !knownKeyUsages.Has(string(u)) {
			errs = append(errs, field.NotSupported(p, u, sets.List(knownKeyUsages)))
		}
		if seen.Has(string(u)) {
			errs = append(errs, field.Duplicate(p, u))
		}
		seen.Insert(string(u))
	}
	errs = append(errs, validateSignerName(csr.Spec.SignerName, specPath.Child("signerName"))...)
	if e := csr.Spec.ExpirationSeconds; e != nil && *e < minCSRExpirationSeconds {
		errs = append(errs, field.Invalid(specPath.Child("expirationSeconds"), *e, fmt.Sprintf("may not specify a duration less than %d seconds", minCSRExpirationSeconds)))
	}
	return append(errs, validateCSRStatus(&csr.Status, field.NewPath("status"))...)
}

// validateSignerName checks a signer name: required, a domain-prefixed
// path ("example.com/signer").
func validateSignerName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || path == "" {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	errs = append(errs, validateDNS1123Subdomain(domain, fldPath)...)
	if len(name) > 571 {
		errs = append(errs, field.TooLong(fldPath, "", 571))
	}
	return errs
}

// validateCSRStatus checks the conditions (known types, at most one of each
// of Approved/Denied/Failed, not both Approved and Denied, status True for
// Approved/Denied) and that a certificate is PEM CERTIFICATE blocks.
func validateCSRStatus(st *certificatesv1.CertificateSigningRequestStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	condPath := fldPath.Child("conditions")
	for i, c := range st.Conditions {
		p := condPath.Index(i)
		if c.Type == "" {
			errs = append(errs, field.Required(p.Child("type"), ""))
		}
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			if seen[c.Type] {
				errs = append(errs, field.Duplicate(p.Child("type"), c.Type))
			}
			seen[c.Type] = true
		}
		switch c.Status {
		case v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown:
		case "":
			errs = append(errs, field.Required(p.Child("status"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []string{string(v1.ConditionTrue), string(v1.ConditionFalse), string(v1.ConditionUnknown)}))
		}
		if (c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied) && c.Status != v1.ConditionTrue && c.Status != "" {
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []string{string(v1.ConditionTrue)}))
		}
	}
	if seen[certificatesv1.CertificateApproved] && seen[certificatesv1.CertificateDenied] {
		errs = append(errs, field.Invalid(condPath, st.Conditions, "Approved and Denied conditions are mutually exclusive"))
	}
	if len(st.Certificate) > 0 {
		if !seen[certificatesv1.CertificateApproved] {
			errs = append(errs, field.Invalid(fldPath.Child("certificate"), "<certificate data>", "certificate may only be set if the Approved condition is true"))
		}
		if err := checkCertificatePEM(st.Certificate); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

// checkCertificatePEM requires one or more PEM CERTIFICATE blocks that parse.
func checkCertificatePEM(data []byte) error {
	n := 0
	for rest := data; len(strings.TrimSpace(string(rest))) > 0; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return fmt.Errorf("must contain at least one PEM-encoded CERTIFICATE block and nothing else")
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("failed to parse certificate: %v", err)
		}
	}
	if n == 0 {
		return fmt.Errorf("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// ValidateCertificateSigningRequestUpdate validates a CSR update through
// the main resource: the spec is immutable.
func ValidateCertificateSigningRequestUpdate(newCSR, oldCSR *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newCSR.ObjectMeta, &oldCSR.ObjectMeta, metadataPath)
	if !apiequality.Semantic.DeepEqual(newCSR.Spec, oldCSR.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "field is immutable"))
	}
	return append(errs, ValidateCertificateSigningRequest(newCSR)...)
}

// ValidateCertificateSigningRequestStatusUpdate validates a /status or
// /approval update: conditions may not be removed once Approved, Denied
// or Failed, and a set certificate may not change.
func ValidateCertificateSigningRequestStatusUpdate(newCSR, oldCSR *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := ValidateCertificateSigningRequestUpdate(newCSR, oldCSR)
	condPath := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if hasCondition(oldCSR, t) && !hasCondition(newCSR, t) {
			errs = append(errs, field.Forbidden(condPath, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if len(oldCSR.Status.Certificate) > 0 && string(oldCSR.Status.Certificate) != string(newCSR.Status.Certificate) {
		errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
	}
	return errs
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
