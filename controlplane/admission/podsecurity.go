package admission

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	psadmission "k8s.io/pod-security-admission/admission"
	psaconfig "k8s.io/pod-security-admission/admission/api"
	psaload "k8s.io/pod-security-admission/admission/api/load"
	psaapi "k8s.io/pod-security-admission/api"
	psametrics "k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"

	"berth/internal/errdefs"
)

// PodSecurityName is the plugin's upstream name.
const PodSecurityName = "PodSecurity"

// PodSecurityConfig configures PodSecurity.
type PodSecurityConfig struct {
	// Namespaces is the namespace lister; the pod-security.kubernetes.io/*
	// labels of a pod's namespace select the policy.
	Namespaces corelisters.NamespaceLister
	// Pods lists a namespace's pods when its enforce label changes, to warn
	// about existing violations.
	Pods corelisters.PodLister
	// Client, when set, is asked for namespaces the lister does not know yet.
	Client kubernetes.Interface
	// Configuration is the PodSecurityConfiguration (defaults, exemptions);
	// nil means upstream's defaults: privileged at the latest version, no exemptions.
	Configuration *psaconfig.PodSecurityConfiguration
	// Registerer receives pod_security_evaluations_total; nil registers nothing.
	Registerer prometheus.Registerer
}

// PodSecurity enforces the Pod Security Standards with the upstream
// library (k8s.io/pod-security-admission): namespaces' enforce labels reject
// pods, warn labels return warnings, audit labels add audit annotations.
type PodSecurity struct {
	*admission.Handler
	delegate *psadmission.Admission
}

var _ admission.ValidationInterface = (*PodSecurity)(nil)

// NewPodSecurity validates cfg and returns the plugin.
func NewPodSecurity(cfg PodSecurityConfig) (*PodSecurity, error) {
	if cfg.Namespaces == nil || cfg.Pods == nil {
		return nil, fmt.Errorf("%s: Config.Namespaces and Config.Pods must be set: %w", PodSecurityName, errdefs.ErrInvalidArgument)
	}
	conf := cfg.Configuration
	if conf == nil {
		var err error
		if conf, err = psaload.LoadFromData(nil); err != nil {
			return nil, fmt.Errorf("%s: default configuration: %w", PodSecurityName, err)
		}
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: evaluator: %w", PodSecurityName, err)
	}
	rec, err := newPodSecurityRecorder(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	d := &psadmission.Admission{
		Configuration:    conf,
		Evaluator:        evaluator,
		Metrics:          rec,
		PodSpecExtractor: psadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  namespaceGetter{lister: cfg.Namespaces, client: cfg.Client},
		PodLister:        psadmission.PodListerFromInformer(cfg.Pods),
	}
	if err := d.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", PodSecurityName, err, errdefs.ErrInvalidArgument)
	}
	if err := d.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", PodSecurityName, err, errdefs.ErrInvalidArgument)
	}
	return &PodSecurity{Handler: admission.NewHandler(admission.Create, admission.Update), delegate: d}, nil
}

// Validate evaluates pods, pod-template owners and namespace label changes.
func (p *PodSecurity) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := a.GetResource().GroupResource()
	if gr != namespacesResource.GroupResource() && gr != podsResource.GroupResource() && !p.delegate.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	userName := ""
	if u := a.GetUserInfo(); u != nil {
		userName = u.GetName()
	}
	resp := p.delegate.Validate(ctx, &psaapi.AttributesRecord{
		Name:        a.GetName(),
		Namespace:   a.GetNamespace(),
		Kind:        a.GetKind(),
		Resource:    a.GetResource(),
		Subresource: a.GetSubresource(),
		Operation:   admissionv1.Operation(a.GetOperation()),
		Object:      a.GetObject(),
		OldObject:   a.GetOldObject(),
		Username:    userName,
	})
	for k, v := range resp.AuditAnnotations {
		_ = a.AddAnnotation("pod-security.kubernetes.io/"+k, v)
	}
	for _, w := range resp.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	if resp.Allowed {
		return nil
	}
	if resp.Result == nil {
		return admission.NewForbidden(a, fmt.Errorf("pod security policy denied the request"))
	}
	return &apierrors.StatusError{ErrStatus: *resp.Result}
}

// namespaceGetter reads namespaces from the lister, then the client.
type namespaceGetter struct {
	lister corelisters.NamespaceLister
	client kubernetes.Interface
}

// GetNamespace implements the library's NamespaceGetter.
func (g namespaceGetter) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, err := g.lister.Get(name)
	if apierrors.IsNotFound(err) && g.client != nil {
		return g.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
	return ns, err
}

// podSecurityRecorder counts evaluations with client_golang on the caller's
// registerer (the library's own recorder uses a process-global registry).
type podSecurityRecorder struct {
	evaluations *prometheus.CounterVec
	exemptions  *prometheus.CounterVec
	errors      *prometheus.CounterVec
}

func newPodSecurityRecorder(reg prometheus.Registerer) (*podSecurityRecorder, error) {
	r := &podSecurityRecorder{
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pod_security_evaluations_total",
			Help: "Number of policy evaluations that occurred, not counting ignored or exempt requests."},
			[]string{"decision", "policy_level", "policy_version", "mode", "request_operation", "resource", "subresource"}),
		exemptions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pod_security_exemptions_total",
			Help: "Number of exempt requests, not counting ignored or out of scope requests."},
			[]string{"request_operation", "resource", "subresource"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pod_security_errors_total",
			Help: "Number of errors preventing normal evaluation."},
			[]string{"fatal", "request_operation", "resource", "subresource"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{r.evaluations, r.exemptions, r.errors} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("%s: register metrics: %w", PodSecurityName, err)
			}
		}
	}
	return r, nil
}

// RecordEvaluation implements the library's metrics.Recorder.
func (r *podSecurityRecorder) RecordEvaluation(d psametrics.Decision, lv psaapi.LevelVersion, mode psametrics.Mode, a psaapi.Attributes) {
	r.evaluations.WithLabelValues(string(d), string(lv.Level), lv.Version.String(), string(mode),
		string(a.GetOperation()), a.GetResource().Resource, a.GetSubresource()).Inc()
}

// RecordExemption implements the library's metrics.Recorder.
func (r *podSecurityRecorder) RecordExemption(a psaapi.Attributes) {
	r.exemptions.WithLabelValues(string(a.GetOperation()), a.GetResource().Resource, a.GetSubresource()).Inc()
}

// RecordError implements the library's metrics.Recorder.
func (r *podSecurityRecorder) RecordError(fatal bool, a psaapi.Attributes) {
	r.errors.WithLabelValues(fmt.Sprint(fatal), string(a.GetOperation()), a.GetResource().Resource, a.GetSubresource()).Inc()
}
