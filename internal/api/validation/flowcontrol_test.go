package validation

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"berth/internal/api/defaults"
)

func TestValidateFlowSchema(t *testing.T) {
	rule := flowcontrolv1.PolicyRulesWithSubjects{
		Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "u"}}},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, Namespaces: []string{"*"}}},
	}
	for name, tc := range map[string]struct {
		fs    flowcontrolv1.FlowSchema
		wants []want
	}{
		"valid": {flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "f"}, Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 500,
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl"}, Rules: []flowcontrolv1.PolicyRulesWithSubjects{rule}}}, nil},
		"precedence 1 and no level": {flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "f"}, Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 1}}, []want{
			{field.ErrorTypeInvalid, "spec.matchingPrecedence", "only the schema named 'exempt' may have matchingPrecedence 1"},
			{field.ErrorTypeRequired, "spec.priorityLevelConfiguration.name", "must reference a priority level"}}},
		"bad rule": {flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "f"}, Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 20000,
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl"},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, User: &flowcontrolv1.UserSubject{Name: "u"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"fly"}, NonResourceURLs: []string{"/a*"}}},
			}}}}, []want{
			{field.ErrorTypeInvalid, "spec.matchingPrecedence", "must not be greater than 10000"},
			{field.ErrorTypeRequired, "spec.rules[0].subjects[0].group", "group is required when subject kind is 'Group'"},
			{field.ErrorTypeForbidden, "spec.rules[0].subjects[0].user", "user is forbidden when subject kind is not 'User'"},
			{field.ErrorTypeNotSupported, "spec.rules[0].nonResourceRules[0].verbs", ""},
			{field.ErrorTypeInvalid, "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]", "wildcard can only do suffix matching"}}},
	} {
		t.Run(name, func(t *testing.T) {
			checkErrors(t, ValidateFlowSchema(&tc.fs), tc.wants...)
		})
	}
}

// TestValidateMandatory: the bootstrap objects, defaulted as stored, are
// valid; changing a mandatory spec is not, except the exempt level's
// concurrency settings.
func TestValidateMandatory(t *testing.T) {
	for _, fs := range append(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas...) {
		fs = fs.DeepCopy()
		defaults.FlowSchema(fs)
		checkErrors(t, ValidateFlowSchema(fs))
	}
	for _, pl := range append(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations...) {
		pl = pl.DeepCopy()
		defaults.PriorityLevelConfiguration(pl)
		checkErrors(t, ValidatePriorityLevelConfiguration(pl))
	}
	fs := bootstrap.MandatoryFlowSchemaCatchAll.DeepCopy()
	defaults.FlowSchema(fs)
	fs.Spec.MatchingPrecedence = 9000
	checkErrors(t, ValidateFlowSchema(fs), want{field.ErrorTypeInvalid, "spec", "spec of 'catch-all' must equal the fixed value"})

	pl := bootstrap.MandatoryPriorityLevelConfigurationExempt.DeepCopy()
	defaults.PriorityLevelConfiguration(pl)
	ten := int32(10)
	pl.Spec.Exempt.NominalConcurrencyShares = &ten
	checkErrors(t, ValidatePriorityLevelConfiguration(pl))
}

func TestValidatePriorityLevelConfiguration(t *testing.T) {
	limited := func(r flowcontrolv1.LimitResponse) flowcontrolv1.PriorityLevelConfiguration {
		return flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "pl"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: r}}}
	}
	for name, tc := range map[string]struct {
		pl    flowcontrolv1.PriorityLevelConfiguration
		wants []want
	}{
		"reject":         {limited(flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}), nil},
		"queue, no spec": {limited(flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue}), []want{{field.ErrorTypeRequired, "spec.limited.limitResponse.queuing", ""}}},
		"hand bigger than deck": {limited(flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
			Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 8, QueueLengthLimit: 1}}),
			[]want{{field.ErrorTypeInvalid, "spec.limited.limitResponse.queuing.handSize", "should not be greater than queues (4)"}}},
		"exempt type on another name": {flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "pl"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}},
			[]want{{field.ErrorTypeInvalid, "spec.type", "must be 'Exempt' if and only if `name` is 'exempt'"}}},
	} {
		t.Run(name, func(t *testing.T) {
			checkErrors(t, ValidatePriorityLevelConfiguration(&tc.pl), tc.wants...)
		})
	}
}
