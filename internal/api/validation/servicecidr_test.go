package validation

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateServiceCIDR(t *testing.T) {
	sc := func(cidrs ...string) *networkingv1.ServiceCIDR {
		return &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
	}
	for _, tc := range []struct {
		c    *networkingv1.ServiceCIDR
		want string // "" valid
	}{
		{sc("10.96.0.0/16"), ""},
		{sc("10.96.0.0/16", "fd00::/108"), ""},
		{sc(), "spec.cidrs: Required value: at least one CIDR required"},
		{sc("10.0.0.0/24", "fd00::/120", "10.1.0.0/24"), "spec.cidrs: Invalid value"},
		{sc("10.0.0.0/24", "10.1.0.0/24"), "may specify no more than one IP for each IP family"},
		{sc("10.0.0.1/24"), "spec.cidrs[0]: Invalid value"},
	} {
		errs := ValidateServiceCIDR(tc.c)
		if got := errs.ToAggregate(); (tc.want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), tc.want)) {
			t.Errorf("%v: got %v, want %q", tc.c.Spec.CIDRs, got, tc.want)
		}
	}
	old := sc("10.96.0.0/16")
	old.ResourceVersion = "1"
	upd := sc("10.96.0.0/16", "fd00::/108")
	upd.ResourceVersion = "1"
	if errs := ValidateServiceCIDRUpdate(upd, old); len(errs) != 0 {
		t.Errorf("adding the second family: %v", errs)
	}
	upd = sc("10.97.0.0/16")
	upd.ResourceVersion = "1"
	if errs := ValidateServiceCIDRUpdate(upd, old); len(errs) != 1 || !strings.Contains(errs[0].Error(), "field is immutable") {
		t.Errorf("changing the CIDR: %v", errs)
	}
}

func TestValidateIPAddress(t *testing.T) {
	ref := &networkingv1.ParentReference{Resource: "services", Namespace: "ns", Name: "web"}
	for _, tc := range []struct {
		name string
		ref  *networkingv1.ParentReference
		want string
	}{
		{"10.96.0.10", ref, ""},
		{"fe80::42:1dff:fe84:f9e2", ref, ""},
		{"10.096.0.10", ref, "metadata.name: Invalid value"},
		{"2001:db8:0::1", ref, "metadata.name: Invalid value"},
		{"10.96.0.10", nil, "spec.parentRef: Required value"},
		{"10.96.0.10", &networkingv1.ParentReference{Name: "web"}, "spec.parentRef.resource: Required value"},
		{"10.96.0.10", &networkingv1.ParentReference{Group: "Bad_Group", Resource: "x", Name: "y"}, "spec.parentRef.group: Invalid value"},
	} {
		errs := ValidateIPAddress(&networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: networkingv1.IPAddressSpec{ParentRef: tc.ref}})
		if got := errs.ToAggregate(); (tc.want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), tc.want)) {
			t.Errorf("%s %+v: got %v, want %q", tc.name, tc.ref, got, tc.want)
		}
	}
}
