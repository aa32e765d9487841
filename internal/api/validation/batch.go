package validation

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilptr "k8s.io/utils/ptr"
)

// Upstream's limits on job specs.
const (
	maxParallelismForIndexedJob             = 100000
	maxFailedIndexesForIndexedJob           = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000
	maxPodFailurePolicyRules                = 20
	maxPodFailurePolicyOnExitCodesValues    = 255
	maxPodFailurePolicyOnPodConditions      = 20
	maxManagedByLength                      = 63
	maxSucceededIndexesLength               = 64 * 1024
	maxSuccessPolicyRules                   = 20
)

// The unprefixed pod labels jobs set next to batch.kubernetes.io/job-name
// and batch.kubernetes.io/controller-uid (k8s.io/api has no constant).
const (
	LegacyJobNameLabel       = "job-name"
	LegacyControllerUIDLabel = "controller-uid"
)

var (
	podFailurePolicyActions = sets.New(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore)
	podFailurePolicyOperators = sets.New(batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn)
	podFailurePolicyStatuses  = sets.New(v1.ConditionFalse, v1.ConditionTrue, v1.ConditionUnknown)
	podReplacementPolicies    = sets.New(batchv1.Failed, batchv1.TerminatingOrFailed)
)

// JobOptions are the update-dependent switches of job validation.
type JobOptions struct {
	// AllowMutableSchedulingDirectives lets a suspended job that never
	// started change its template's node affinity, node selector,
	// tolerations, labels, annotations and scheduling gates.
	AllowMutableSchedulingDirectives bool
	// RequirePrefixedLabels requires the batch.kubernetes.io/ labels next
	// to the legacy ones (false only for jobs created before they existed).
	RequirePrefixedLabels bool
}

// JobOptionsFor returns the options for validating job (on update, old is
// the stored job; nil on create), as upstream's strategy derives them.
func JobOptionsFor(old *batchv1.Job) JobOptions {
	if old == nil {
		return JobOptions{RequirePrefixedLabels: true}
	}
	_, hadName := old.Spec.Template.Labels[batchv1.JobNameLabel]
	_, hadUID := old.Spec.Template.Labels[batchv1.ControllerUidLabel]
	return JobOptions{
		AllowMutableSchedulingDirectives: utilptr.Deref(old.Spec.Suspend, false) && old.Status.StartTime == nil,
		RequirePrefixedLabels:            hadName && hadUID,
	}
}

// ValidateJob validates a job: metadata, the generated selector and its
// labels (unless manualSelector), the spec, and that the last index's pod
// hostname of an Indexed job is a DNS label.
func ValidateJob(job *batchv1.Job, opts JobOptions) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&job.ObjectMeta, true, DNSSubdomainName, metadataPath)
	errs = append(errs, validateGeneratedSelector(job, opts.RequirePrefixedLabels)...)
	errs = append(errs, validateJobSpecWithSelector(&job.Spec, field.NewPath("spec"))...)
	if utilptr.Deref(job.Spec.CompletionMode, "") == batchv1.IndexedCompletion && utilptr.Deref(job.Spec.Completions, 0) > 0 {
		host := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(metadataPath.Child("name"), job.Name, "will not able to create pod with invalid DNS label: "+host))
		}
	}
	return errs
}

// validateGeneratedSelector checks that a job without manualSelector has
// the labels and selector the apiserver generates.
func validateGeneratedSelector(job *batchv1.Job, prefixed bool) field.ErrorList {
	if utilptr.Deref(job.Spec.ManualSelector, false) || job.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(metadataPath.Child("uid"), ""))
	}
	tmplMeta := field.NewPath("spec", "template", "metadata")
	expected := map[string]string{}
	keys := [][2]string{{LegacyControllerUIDLabel, string(job.UID)}, {LegacyJobNameLabel, job.Name}}
	if prefixed {
		keys = append(keys, [2]string{batchv1.ControllerUidLabel, string(job.UID)}, [2]string{batchv1.JobNameLabel, job.Name})
	}
	for _, kv := range keys {
		errs = append(errs, validateHasLabel(job.Spec.Template.Labels, tmplMeta, kv[0], kv[1])...)
		expected[kv[0]] = kv[1]
	}
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !sel.Matches(labels.Set(expected)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateHasLabel requires label key with value want under fldPath.labels.
func validateHasLabel(have map[string]string, fldPath *field.Path, key, want string) field.ErrorList {
	got, ok := have[key]
	if !ok {
		return field.ErrorList{field.Required(fldPath.Child("labels").Key(key), fmt.Sprintf("must be '%s'", want))}
	}
	if got != want {
		return field.ErrorList{field.Invalid(fldPath.Child("labels").Key(key), have, fmt.Sprintf("must be '%s'", want))}
	}
	return nil
}

// validateJobSpecWithSelector validates a job's spec, its selector and
// that the selector matches the template's labels.
func validateJobSpecWithSelector(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	errs := validateJobSpec(spec, fldPath)
	if spec.Selector == nil {
		errs = append(errs, field.Required(fldPath.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// validateJobSpec validates the parts of a job spec a CronJob's template
// shares with a Job (everything but the selector).
func validateJobSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		v    *int32
		name string
	}{{spec.Parallelism, "parallelism"}, {spec.Completions, "completions"}, {spec.BackoffLimit, "backoffLimit"},
		{spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished"}, {spec.BackoffLimitPerIndex, "backoffLimitPerIndex"}} {
		if f.v != nil {
			errs = append(errs, validateNonnegative(int64(*f.v), fldPath.Child(f.name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, validateNonnegative(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.MaxFailedIndexes != nil {
		errs = append(errs, validateNonnegative(int64(*spec.MaxFailedIndexes), fldPath.Child("maxFailedIndexes"))...)
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.ManagedBy != nil {
		errs = append(errs, validation.IsDomainPrefixedPath(fldPath.Child("managedBy"), *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			errs = append(errs, field.TooLong(fldPath.Child("managedBy"), "", maxManagedByLength))
		}
	}
	indexed := utilptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	if spec.CompletionMode != nil {
		errs = append(errs, validateIndexedLimits(spec, fldPath)...)
	}
	if !indexed {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if !indexed {
			errs = append(errs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			errs = append(errs, validateSuccessPolicy(spec, fldPath.Child("successPolicy"))...)
		}
	}
	if p := spec.PodReplacementPolicy; p != nil {
		if spec.PodFailurePolicy != nil {
			if *p != batchv1.Failed {
				errs = append(errs, field.NotSupported(fldPath.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		} else if !podReplacementPolicies.Has(*p) {
			errs = append(errs, field.NotSupported(fldPath.Child("podReplacementPolicy"), *p, sets.List(podReplacementPolicies)))
		}
	}
	errs = append(errs, ValidatePodTemplateSpec(&spec.Template, fldPath.Child("template"))...)
	rp := fldPath.Child("template", "spec", "restartPolicy")
	switch policy := spec.Template.Spec.RestartPolicy; {
	case policy == v1.RestartPolicyAlways || policy == "":
		errs = append(errs, field.Required(rp, fmt.Sprintf("valid values: %q, %q", v1.RestartPolicyOnFailure, v1.RestartPolicyNever)))
	case policy != v1.RestartPolicyOnFailure && policy != v1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rp, policy, []v1.RestartPolicy{v1.RestartPolicyOnFailure, v1.RestartPolicyNever}))
	case spec.PodFailurePolicy != nil && policy != v1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rp, policy, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", v1.RestartPolicyNever)))
	}
	return errs
}

// validateIndexedLimits checks completionMode and the Indexed job limits.
func validateIndexedLimits(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mode := *spec.CompletionMode
	if mode != batchv1.NonIndexedCompletion && mode != batchv1.IndexedCompletion {
		errs = append(errs, field.NotSupported(fldPath.Child("completionMode"), mode, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if mode != batchv1.IndexedCompletion {
		return errs
	}
	if spec.Completions == nil {
		errs = append(errs, field.Required(fldPath.Child("completions"), "when completion mode is Indexed"))
	}
	if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism,
			fmt.Sprintf("must be less than or equal to %d when completion mode is Indexed", maxParallelismForIndexedJob)))
	}
	if spec.Completions != nil && spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > *spec.Completions {
		errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "must be less than or equal to completions"))
	}
	if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
		errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if spec.Completions != nil && *spec.Completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		if spec.MaxFailedIndexes == nil {
			errs = append(errs, field.Required(fldPath.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > parallelismLimitForHighCompletions {
			errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism, fmt.Sprintf(
				"must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf(
				"must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	return errs
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fldPath.Child("rules")
	if n := len(spec.PodFailurePolicy.Rules); n > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, n, maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range spec.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range spec.PodFailurePolicy.Rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &spec.PodFailurePolicy.Rules[i], rulesPath.Index(i), containers)...)
	}
	return errs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, rulePath *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	actionPath := rulePath.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(actionPath, fmt.Sprintf("valid values: %q", sets.List(podFailurePolicyActions))))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !podFailurePolicyActions.Has(rule.Action):
		errs = append(errs, field.NotSupported(actionPath, rule.Action, sets.List(podFailurePolicyActions)))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, rulePath.Child("onExitCodes"), containers)...)
	}
	if len(rule.OnPodConditions) > 0 {
		p := rulePath.Child("onPodConditions")
		if len(rule.OnPodConditions) > maxPodFailurePolicyOnPodConditions {
			errs = append(errs, field.TooMany(p, len(rule.OnPodConditions), maxPodFailurePolicyOnPodConditions))
		}
		for j, pattern := range rule.OnPodConditions {
			pp := p.Index(j)
			errs = append(errs, validateQualifiedName(string(pattern.Type), pp.Child("type"))...)
			if pattern.Status == "" {
				errs = append(errs, field.Required(pp.Child("status"), fmt.Sprintf("valid values: %q", sets.List(podFailurePolicyStatuses))))
			} else if !podFailurePolicyStatuses.Has(pattern.Status) {
				errs = append(errs, field.NotSupported(pp.Child("status"), pattern.Status, sets.List(podFailurePolicyStatuses)))
			}
		}
	}
	if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
		errs = append(errs, field.Invalid(rulePath, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	}
	if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
		errs = append(errs, field.Invalid(rulePath, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, fldPath *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	opPath := fldPath.Child("operator")
	if req.Operator == "" {
		errs = append(errs, field.Required(opPath, fmt.Sprintf("valid values: %q", sets.List(podFailurePolicyOperators))))
	} else if !podFailurePolicyOperators.Has(req.Operator) {
		errs = append(errs, field.NotSupported(opPath, req.Operator, sets.List(podFailurePolicyOperators)))
	}
	if req.ContainerName != nil && !containers.Has(*req.ContainerName) {
		errs = append(errs, field.Invalid(fldPath.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := fldPath.Child("values")
	if len(req.Values) == 0 {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "at least one value is required"))
	} else if len(req.Values) > maxPodFailurePolicyOnExitCodesValues {
		errs = append(errs, field.TooMany(valuesPath, len(req.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	ordered := true
	seen := sets.New[int32]()
	for j, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(valuesPath.Index(j), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(valuesPath.Index(j), v))
		}
		seen.Insert(v)
		if j > 0 && req.Values[j-1] > v {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "must be ordered"))
	}
	return errs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		errs = append(errs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRules))
	}
	completions := utilptr.Deref(spec.Completions, 0)
	for i, rule := range rules {
		rp := rulesPath.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			errs = append(errs, field.Required(rp, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if rule.SucceededIndexes != nil {
			ip := rp.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSucceededIndexesLength {
				errs = append(errs, field.TooLong(ip, "", maxSucceededIndexesLength))
			}
			var err error
			if total, err = ValidateIndexes(*rule.SucceededIndexes, completions); err != nil {
				errs = append(errs, field.Invalid(ip, *rule.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
			}
		}
		if rule.SucceededCount != nil {
			cp := rp.Child("succeededCount")
			errs = append(errs, validateNonnegative(int64(*rule.SucceededCount), cp)...)
			if *rule.SucceededCount > completions {
				errs = append(errs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
				errs = append(errs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return errs
}

// ValidateJobUpdate validates a job update: the new job is valid, and
// selector, completions (unless Indexed and changed with parallelism),
// completionMode, podFailurePolicy, backoffLimitPerIndex, managedBy,
// successPolicy and the template (but for scheduling directives of a
// suspended job that never started) are immutable.
func ValidateJobUpdate(newJob, oldJob *batchv1.Job, opts JobOptions) field.ErrorList {
	errs := ValidateJob(newJob, opts)
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&newJob.ObjectMeta, &oldJob.ObjectMeta, metadataPath)...)
	spec, old := &newJob.Spec, &oldJob.Spec
	p := field.NewPath("spec")
	immutable := func(a, b interface{}, name string) {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(a, b, p.Child(name))...)
	}
	if utilptr.Deref(spec.CompletionMode, "") != batchv1.IndexedCompletion {
		immutable(spec.Completions, old.Completions, "completions")
	} else if !apiequality.Semantic.DeepEqual(spec.Completions, old.Completions) && spec.Completions != nil &&
		*spec.Completions != utilptr.Deref(spec.Parallelism, 0) {
		errs = append(errs, field.Invalid(p.Child("completions"), spec.Completions, "can only be modified in tandem with spec.parallelism"))
	}
	immutable(spec.Selector, old.Selector, "selector")
	errs = append(errs, validateJobTemplateUpdate(spec, old, p, opts)...)
	immutable(spec.CompletionMode, old.CompletionMode, "completionMode")
	immutable(spec.PodFailurePolicy, old.PodFailurePolicy, "podFailurePolicy")
	immutable(spec.BackoffLimitPerIndex, old.BackoffLimitPerIndex, "backoffLimitPerIndex")
	immutable(spec.ManagedBy, old.ManagedBy, "managedBy")
	immutable(spec.SuccessPolicy, old.SuccessPolicy, "successPolicy")
	return errs
}

// validateJobTemplateUpdate forbids template changes, except the
// scheduling directives when opts allow them.
func validateJobTemplateUpdate(spec, old *batchv1.JobSpec, fldPath *field.Path, opts JobOptions) field.ErrorList {
	tmpl, oldTmpl := &spec.Template, &old.Template
	if opts.AllowMutableSchedulingDirectives {
		oldTmpl = old.Template.DeepCopy()
		switch {
		case tmpl.Spec.Affinity == nil && oldTmpl.Spec.Affinity != nil:
			oldTmpl.Spec.Affinity.NodeAffinity = nil
			if *oldTmpl.Spec.Affinity == (v1.Affinity{}) {
				oldTmpl.Spec.Affinity = nil
			}
		case tmpl.Spec.Affinity != nil && oldTmpl.Spec.Affinity == nil:
			oldTmpl.Spec.Affinity = &v1.Affinity{NodeAffinity: tmpl.Spec.Affinity.NodeAffinity}
		case tmpl.Spec.Affinity != nil && oldTmpl.Spec.Affinity != nil:
			oldTmpl.Spec.Affinity.NodeAffinity = tmpl.Spec.Affinity.NodeAffinity
		}
		oldTmpl.Spec.NodeSelector = tmpl.Spec.NodeSelector
		oldTmpl.Spec.Tolerations = tmpl.Spec.Tolerations
		oldTmpl.Annotations = tmpl.Annotations
		oldTmpl.Labels = tmpl.Labels
		oldTmpl.Spec.SchedulingGates = tmpl.Spec.SchedulingGates
	}
	return apimachineryvalidation.ValidateImmutableField(tmpl, oldTmpl, fldPath.Child("template"))
}

// ValidateJobStatusUpdate validates a jobs/status update with the checks
// upstream applies when the JobManagedBy gate is on (its default): counts
// non-negative, no uncounted pod twice, terminal conditions consistent
// (Failed needs FailureTarget, Complete needs SuccessCriteriaMet and a
// completionTime, neither with active or terminating pods), counters never
// decreasing, completed and failed indexes well formed and disjoint.
func ValidateJobStatusUpdate(newJob, oldJob *batchv1.Job) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newJob.ObjectMeta, &oldJob.ObjectMeta, metadataPath)
	s, os := &newJob.Status, &oldJob.Status
	p := field.NewPath("status")
	indexed := utilptr.Deref(newJob.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	finished, finishedChanged := jobFinished(s), jobFinished(s) != jobFinished(os)
	completeChanged := condTrue(s, batchv1.JobComplete) != condTrue(os, batchv1.JobComplete)
	failedChanged := condTrue(s, batchv1.JobFailed) != condTrue(os, batchv1.JobFailed)
	targetChanged := condTrue(s, batchv1.JobFailureTarget) != condTrue(os, batchv1.JobFailureTarget)
	criteriaChanged := condTrue(s, batchv1.JobSuccessCriteriaMet) != condTrue(os, batchv1.JobSuccessCriteriaMet)
	completedChanged := s.CompletedIndexes != os.CompletedIndexes
	failedIdxChanged := !utilptr.Equal(s.FailedIndexes, os.FailedIndexes)
	activeChanged := s.Active != os.Active
	startChanged := !equalTime(s.StartTime, os.StartTime)
	completionChanged := !equalTime(s.CompletionTime, os.CompletionTime)
	uncountedChanged := !apiequality.Semantic.DeepEqual(s.UncountedTerminatedPods, os.UncountedTerminatedPods)
	suspendedZero := utilptr.Deref(newJob.Spec.Suspend, false) && utilptr.Deref(newJob.Spec.Completions, -1) == 0
	resuming := condTrue(os, batchv1.JobSuspended) && condIs(s, batchv1.JobSuspended, v1.ConditionFalse)
	complete := condTrue(s, batchv1.JobComplete)
	invalid := func(fld string, value interface{}, msg string) {
		errs = append(errs, field.Invalid(p.Child(fld), value, msg))
	}

	errs = append(errs, validateNonnegative(int64(s.Active), p.Child("active"))...)
	errs = append(errs, validateNonnegative(int64(s.Succeeded), p.Child("succeeded"))...)
	errs = append(errs, validateNonnegative(int64(s.Failed), p.Child("failed"))...)
	if s.Ready != nil {
		errs = append(errs, validateNonnegative(int64(*s.Ready), p.Child("ready"))...)
	}
	if s.Terminating != nil {
		errs = append(errs, validateNonnegative(int64(*s.Terminating), p.Child("terminating"))...)
	}
	if u := s.UncountedTerminatedPods; u != nil {
		seen := sets.New[types.UID]()
		for _, part := range []struct {
			name string
			uids []types.UID
		}{{"succeeded", u.Succeeded}, {"failed", u.Failed}} {
			for i, uid := range part.uids {
				ip := p.Child("uncountedTerminatedPods", part.name).Index(i)
				switch {
				case uid == "":
					errs = append(errs, field.Invalid(ip, uid, "must not be empty"))
				case seen.Has(uid):
					errs = append(errs, field.Duplicate(ip, uid))
				default:
					seen.Insert(uid)
				}
			}
		}
	}
	omit := field.OmitValueType{}
	if (completeChanged || failedChanged) && complete && condTrue(s, batchv1.JobFailed) {
		invalid("conditions", omit, "cannot set Complete=True and Failed=true conditions")
	}
	if (completeChanged || targetChanged) && complete && condTrue(s, batchv1.JobFailureTarget) {
		invalid("conditions", omit, "cannot set Complete=True and FailureTarget=true conditions")
	}
	if (completeChanged || completionChanged) && s.CompletionTime != nil && !complete {
		invalid("completionTime", s.CompletionTime, "cannot set completionTime when there is no Complete=True condition")
	}
	if (completeChanged || completionChanged) && s.CompletionTime == nil && complete {
		errs = append(errs, field.Required(p.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if (startChanged || completionChanged) && s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime) {
		invalid("completionTime", s.CompletionTime, "must be equal to or after `startTime`")
	}
	if (failedChanged || failedIdxChanged) && condTrue(s, batchv1.JobFailed) && !condTrue(s, batchv1.JobFailureTarget) {
		invalid("conditions", omit, "cannot set Failed=True condition without the FailureTarget=true condition")
	}
	if (completeChanged || criteriaChanged) && complete && !condTrue(s, batchv1.JobSuccessCriteriaMet) {
		invalid("conditions", omit, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition")
	}
	if (finishedChanged || activeChanged) && s.Active > 0 && finished {
		invalid("active", s.Active, "active>0 is invalid for finished job")
	}
	if (finishedChanged || startChanged) && !suspendedZero && s.StartTime == nil && finished {
		errs = append(errs, field.Required(p.Child("startTime"), "startTime is required for finished job"))
	}
	if (finishedChanged || uncountedChanged) && finished && s.UncountedTerminatedPods != nil &&
		len(s.UncountedTerminatedPods.Failed)+len(s.UncountedTerminatedPods.Succeeded) > 0 {
		invalid("uncountedTerminatedPods", s.UncountedTerminatedPods, "must be empty for finished job")
	}
	if completedChanged && newJob.Spec.Completions != nil {
		if _, err := ValidateIndexes(s.CompletedIndexes, *newJob.Spec.Completions); err != nil {
			invalid("completedIndexes", s.CompletedIndexes, "error parsing completedIndexes: "+err.Error())
		}
	}
	if failedIdxChanged && newJob.Spec.Completions != nil && newJob.Spec.BackoffLimitPerIndex != nil && s.FailedIndexes != nil {
		if _, err := ValidateIndexes(*s.FailedIndexes, *newJob.Spec.Completions); err != nil {
			invalid("failedIndexes", s.FailedIndexes, "error parsing failedIndexes: "+err.Error())
		}
	}
	if completedChanged && len(s.CompletedIndexes) != 0 && !indexed {
		invalid("completedIndexes", s.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode")
	}
	if failedIdxChanged && newJob.Spec.BackoffLimitPerIndex == nil && s.FailedIndexes != nil {
		invalid("failedIndexes", *s.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null")
	}
	if (failedIdxChanged || completedChanged) && newJob.Spec.Completions != nil && s.FailedIndexes != nil {
		if at, ok := indexesOverlap(s.CompletedIndexes, *s.FailedIndexes, *newJob.Spec.Completions); ok {
			invalid("failedIndexes", *s.FailedIndexes, fmt.Sprintf("failedIndexes and completedIndexes overlap at index: %d", at))
		}
	}
	if (finishedChanged || !utilptr.Equal(s.Terminating, os.Terminating)) && utilptr.Deref(s.Terminating, 0) > 0 && finished {
		invalid("terminating", s.Terminating, "terminating>0 is invalid for finished job")
	}
	if (!utilptr.Equal(s.Ready, os.Ready) || activeChanged) && s.Ready != nil && *s.Ready > s.Active {
		invalid("ready", *s.Ready, "cannot set more ready pods than active")
	}
	criteria := condTrue(s, batchv1.JobSuccessCriteriaMet)
	if criteria && condTrue(s, batchv1.JobFailed) {
		invalid("conditions", omit, "cannot set SuccessCriteriaMet=True and Failed=true conditions")
	}
	if criteria && condTrue(s, batchv1.JobFailureTarget) {
		invalid("conditions", omit, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
	}
	if newJob.Spec.SuccessPolicy != nil && !criteria && complete {
		invalid("conditions", omit, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True")
	}
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		if condTrue(os, t) && !condTrue(s, t) {
			invalid("conditions", omit, fmt.Sprintf("cannot disable the terminal %s=True condition", t))
		}
	}
	if s.Failed < os.Failed {
		invalid("failed", s.Failed, "cannot decrease the failed counter")
	}
	if (!indexed || !utilptr.Equal(newJob.Spec.Completions, newJob.Spec.Parallelism)) && s.Succeeded < os.Succeeded {
		invalid("succeeded", s.Succeeded, "cannot decrease the succeeded counter")
	}
	if s.CompletionTime != nil && os.CompletionTime != nil && !s.CompletionTime.Equal(os.CompletionTime) {
		invalid("completionTime", s.CompletionTime, "field is immutable")
	}
	if startChanged && !resuming && os.StartTime != nil && !utilptr.Deref(newJob.Spec.Suspend, false) {
		errs = append(errs, field.Required(p.Child("startTime"), "startTime cannot be removed for unsuspended job"))
	}
	if condTrue(os, batchv1.JobSuccessCriteriaMet) && !criteria {
		invalid("conditions", omit, "cannot disable the SuccessCriteriaMet=True condition")
	}
	if condTrue(os, batchv1.JobComplete) && !condTrue(os, batchv1.JobSuccessCriteriaMet) && criteria {
		invalid("conditions", omit, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions")
	}
	return errs
}

func equalTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func condIs(s *batchv1.JobStatus, t batchv1.JobConditionType, status v1.ConditionStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == t && c.Status == status {
			return true
		}
	}
	return false
}

func condTrue(s *batchv1.JobStatus, t batchv1.JobConditionType) bool {
	return condIs(s, t, v1.ConditionTrue)
}

func jobFinished(s *batchv1.JobStatus) bool {
	return condTrue(s, batchv1.JobComplete) || condTrue(s, batchv1.JobFailed)
}

// ValidateIndexes checks an index list ("1,3-5,7") against completions:
// intervals in increasing order, each below completions. It returns how
// many indexes the list holds; the errors are upstream's.
func ValidateIndexes(list string, completions int32) (int32, error) {
	if list == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, interval := range strings.Split(list, ",") {
		x, y, err := parseIndexInterval(interval, completions)
		if err != nil {
			return 0, err
		}
		if last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, x)
		}
		total += y - x + 1
		last = y
	}
	return total, nil
}

func parseIndexInterval(interval string, completions int32) (int32, int32, error) {
	parts := strings.Split(interval, "-")
	if len(parts) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", interval)
	}
	bound := func(s string) (int32, error) {
		v, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("cannot convert string to integer for index: %q", s)
		}
		if v >= int(completions) {
			return 0, fmt.Errorf("too large index: %q", s)
		}
		return int32(v), nil
	}
	x, err := bound(parts[0])
	if err != nil {
		return 0, 0, err
	}
	if len(parts) == 1 {
		return x, x, nil
	}
	y, err := bound(parts[1])
	if err != nil {
		return 0, 0, err
	}
	if x >= y {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
	}
	return x, y, nil
}

// indexesOverlap reports the first index both well-formed intervals of
// completed and failed hold (malformed intervals are skipped).
func indexesOverlap(completed, failed string, completions int32) (int32, bool) {
	if completed == "" || failed == "" {
		return 0, false
	}
	type iv struct{ x, y int32 }
	parse := func(list string) []iv {
		var out []iv
		for _, s := range strings.Split(list, ",") {
			if x, y, err := parseIndexInterval(s, completions); err == nil {
				out = append(out, iv{x, y})
			}
		}
		return out
	}
	c, f := parse(completed), parse(failed)
	for i, j := 0, 0; i < len(c) && j < len(f); {
		if c[i].x <= f[j].y && f[j].x <= c[i].y {
			return max(c[i].x, f[j].x), true
		}
		if c[i].x <= f[j].x {
			i++
		} else {
			j++
		}
	}
	return 0, false
}

// validTimeZoneCharacters is what each part of an IANA time zone name may hold.
var validTimeZoneCharacters = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// ValidateCronJob validates a new cron job: metadata, a name of at most 52
// characters (job names add 11), and the spec.
func ValidateCronJob(cj *batchv1.CronJob) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&cj.ObjectMeta, true, DNSSubdomainName, metadataPath)
	errs = append(errs, validateCronJobSpec(&cj.Spec, nil, field.NewPath("spec"))...)
	if len(cj.Name) > validation.DNS1035LabelMaxLength-11 {
		errs = append(errs, field.Invalid(metadataPath.Child("name"), cj.Name, "must be no more than 52 characters"))
	}
	return errs
}

// ValidateCronJobUpdate validates a cron job update.
func ValidateCronJobUpdate(cj, old *batchv1.CronJob) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&cj.ObjectMeta, &old.ObjectMeta, metadataPath)
	return append(errs, validateCronJobSpec(&cj.Spec, &old.Spec, field.NewPath("spec"))...)
}

func validateCronJobSpec(spec, old *batchv1.CronJobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(fldPath.Child("schedule"), ""))
	} else {
		allowTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		errs = append(errs, validateSchedule(spec.Schedule, allowTZ, spec.TimeZone, fldPath.Child("schedule"))...)
	}
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, validateNonnegative(*spec.StartingDeadlineSeconds, fldPath.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || !utilptr.Equal(old.TimeZone, spec.TimeZone) {
		errs = append(errs, validateTimeZone(spec.TimeZone, fldPath.Child("timeZone"))...)
	}
	cp := fldPath.Child("concurrencyPolicy")
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cp, ""))
	default:
		errs = append(errs, field.NotSupported(cp, spec.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	tp := fldPath.Child("jobTemplate")
	errs = append(errs, validateJobSpec(&spec.JobTemplate.Spec, tp.Child("spec"))...)
	if spec.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(tp.Child("spec", "selector"), spec.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if utilptr.Deref(spec.JobTemplate.Spec.ManualSelector, false) {
		errs = append(errs, field.NotSupported(tp.Child("spec", "manualSelector"), spec.JobTemplate.Spec.ManualSelector, []string{"nil", "false"}))
	}
	if spec.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.SuccessfulJobsHistoryLimit), fldPath.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.FailedJobsHistoryLimit), fldPath.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// validateSchedule parses a standard cron schedule; TZ= or CRON_TZ= in it
// is allowed only where the stored schedule had it already, and never with
// the timeZone field.
func validateSchedule(schedule string, allowTZ bool, timeZone *string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(fldPath, schedule, err.Error()))
	}
	hasTZ := strings.Contains(schedule, "TZ")
	switch {
	case allowTZ && hasTZ && timeZone != nil:
		errs = append(errs, field.Invalid(fldPath, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && hasTZ:
		errs = append(errs, field.Invalid(fldPath, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

func validateTimeZone(tz *string, fldPath *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(fldPath, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneCharacters.MatchString(part) {
			return field.ErrorList{field.Invalid(fldPath, tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(fldPath, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(fldPath, tz, err.Error()))
	}
	return errs
}
