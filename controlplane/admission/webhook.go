package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/internal/errdefs"
)

// Upstream names of the webhook plugins.
const (
	MutatingWebhookName   = "MutatingAdmissionWebhook"
	ValidatingWebhookName = "ValidatingAdmissionWebhook"
)

// WebhookConfig configures the webhook plugins.
type WebhookConfig struct {
	// Mutating lists MutatingWebhookConfigurations (required by
	// NewMutatingWebhook); Validating lists ValidatingWebhookConfigurations
	// (required by NewValidatingWebhook). The apiserver must serve and watch
	// admissionregistration.k8s.io/v1.
	Mutating   admissionlisters.MutatingWebhookConfigurationLister
	Validating admissionlisters.ValidatingWebhookConfigurationLister
	// Namespaces gives namespace labels to namespaceSelectors; Client,
	// when set, looks up namespaces the lister does not know yet (a
	// namespace created an instant before the request).
	Namespaces corelisters.NamespaceLister
	Client     kubernetes.Interface
	// ResolveService maps clientConfig.service to a URL (the serving
	// certificate must name NAME.NAMESPACE.svc whatever the URL); nil means
	// DefaultServiceResolver (https://NAME.NAMESPACE.svc:PORT).
	// ConfigFromInformers sets EndpointServiceResolver.
	ResolveService ServiceResolver
	// Logger records calls that failed under failurePolicy Ignore; nil discards.
	Logger *slog.Logger
}

type webhookBase struct {
	namespaces corelisters.NamespaceLister
	client     kubernetes.Interface
	resolve    ServiceResolver
	clients    *webhookClients
	conditions *conditionMatchers
	log        *slog.Logger
}

func newWebhookBase(cfg WebhookConfig) (webhookBase, error) {
	if cfg.Namespaces == nil {
		return webhookBase{}, fmt.Errorf("webhook admission: Config.Namespaces must be set: %w", errdefs.ErrInvalidArgument)
	}
	b := webhookBase{namespaces: cfg.Namespaces, client: cfg.Client, resolve: cfg.ResolveService, clients: &webhookClients{}, conditions: &conditionMatchers{}, log: cfg.Logger}
	if b.resolve == nil {
		b.resolve = DefaultServiceResolver
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b, nil
}

// namespace finds a namespace in the lister, else (the cache may lag) through the client.
func (b *webhookBase) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, err := b.namespaces.Get(name)
	if apierrors.IsNotFound(err) && b.client != nil {
		ns, err = b.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
	return ns, err
}

// matchError is the API error for a failure to match a request: an API
// status (a missing namespace's 404) as is, anything else a 500.
func matchError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return apierrors.NewInternalError(err)
}

// checkDryRun refuses a dry-run request to a webhook that may have side
// effects, as upstream: sideEffects None or NoneOnDryRun are required.
func checkDryRun(a admission.Attributes, w *webhookSpec) error {
	if !a.IsDryRun() {
		return nil
	}
	if w.sideEffects == nil {
		return &callFailure{webhook: w.name, reason: errors.New("webhook sideEffects is not set")}
	}
	switch *w.sideEffects {
	case admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun:
		return nil
	}
	return webhookerrors.NewDryRunUnsupportedErr(w.name)
}

// call invokes one matching webhook: its warnings go to the client, its
// audit annotations to the request, and a refusal becomes the API error
// kube-apiserver returns. Call failures are *callFailure, left to
// failurePolicy (see outcome).
func (b *webhookBase) call(ctx context.Context, w *webhookSpec, a admission.Attributes, mutating bool) (*webhookrequest.AdmissionResponse, error) {
	if err := checkDryRun(a, w); err != nil {
		return nil, err
	}
	resp, err := callWebhook(ctx, w, a, b.clients, b.resolve, mutating)
	if err != nil {
		return nil, err
	}
	for k, v := range resp.AuditAnnotations {
		_ = a.AddAnnotation(w.name+"/"+k, v)
	}
	for _, warn := range resp.Warnings {
		warning.AddWarning(ctx, "", warn)
	}
	if !resp.Allowed {
		return nil, webhookerrors.ToStatusErr(w.name, resp.Result)
	}
	return resp, nil
}

// outcome applies failurePolicy to a webhook's error: nil when the
// failure is ignored (Ignore), a 500 for a failed call under Fail, the
// error itself (a refusal, a dry-run refusal) otherwise.
func (b *webhookBase) outcome(ctx context.Context, w *webhookSpec, err error) error {
	var cf *callFailure
	if !errors.As(err, &cf) {
		return err
	}
	if !w.failOpen() {
		return failedCall(err)
	}
	b.log.Warn("webhook call failed; failurePolicy Ignore", "configuration", w.config, "webhook", w.name, "err", err)
	if ctx.Err() != nil {
		// The request itself ran out of time, not just this webhook.
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	}
	return nil
}

// MutatingWebhook calls the MutatingWebhookConfigurations' webhooks in
// order (configurations by name, webhooks in listed order) and applies
// their JSONPatch responses, defaulting the patched object.
//
// Reinvocation is upstream's: a webhook that changes the object asks the
// apiserver to run the mutating chain once more (wrap the chain in
// admission.NewReinvocationHandler); in that second round the in-tree
// plugins run again and only the webhooks with reinvocationPolicy IfNeeded
// that ran before a later change are called again.
type MutatingWebhook struct {
	*admission.Handler
	webhookBase
	lister admissionlisters.MutatingWebhookConfigurationLister
}

var _ admission.MutationInterface = (*MutatingWebhook)(nil)

// NewMutatingWebhook validates cfg and returns the plugin.
func NewMutatingWebhook(cfg WebhookConfig) (*MutatingWebhook, error) {
	if cfg.Mutating == nil {
		return nil, fmt.Errorf("%s: Config.Mutating must be set: %w", MutatingWebhookName, errdefs.ErrInvalidArgument)
	}
	b, err := newWebhookBase(cfg)
	if err != nil {
		return nil, err
	}
	return &MutatingWebhook{
		Handler:     admission.NewHandler(admission.Create, admission.Update, admission.Delete, admission.Connect),
		webhookBase: b,
		lister:      cfg.Mutating,
	}, nil
}

func (m *MutatingWebhook) webhooks() ([]webhookSpec, error) {
	cfgs, err := m.lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sort.Slice(cfgs, func(i, j int) bool { return cfgs[i].Name < cfgs[j].Name })
	var out []webhookSpec
	for _, c := range cfgs {
		for _, w := range c.Webhooks {
			s := webhookSpec{config: c.Name, name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules,
				failurePolicy: admissionregistrationv1.Fail, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
				sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, reviewVersions: w.AdmissionReviewVersions,
				reinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy, matchConditions: w.MatchConditions}
			if w.FailurePolicy != nil {
				s.failurePolicy = *w.FailurePolicy
			}
			if w.ReinvocationPolicy != nil {
				s.reinvocationPolicy = *w.ReinvocationPolicy
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// reinvocation is the plugin's state across the rounds of one request.
type reinvocation struct {
	// lastOutput is the object as the plugin's last round left it.
	lastOutput runtime.Object
	// invoked are the IfNeeded webhooks called since the last change.
	invoked sets.Set[string]
	// again are the webhooks to call in the reinvocation round.
	again sets.Set[string]
}

// changed marks every IfNeeded webhook called so far for the second round.
func (r *reinvocation) changed() {
	r.again = r.again.Union(r.invoked)
	r.invoked = nil
}

// Admit runs the mutating webhooks.
func (m *MutatingWebhook) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	hooks, err := m.webhooks()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	rc := a.GetReinvocationContext()
	state := &reinvocation{}
	reinvoke := false
	if rc != nil {
		if st, ok := rc.Value(MutatingWebhookName).(*reinvocation); ok {
			state = st
		} else {
			rc.SetValue(MutatingWebhookName, state)
		}
		reinvoke = rc.IsReinvoke()
	}
	if reinvoke && !apiequality.Semantic.DeepEqual(state.lastOutput, a.GetObject()) {
		// An in-tree plugin changed the object in this round.
		state.changed()
	}
	defer func() {
		if obj := a.GetObject(); obj != nil {
			state.lastOutput = obj.DeepCopyObject()
		}
	}()
	for i := range hooks {
		w := &hooks[i]
		ok, err := webhookMatches(ctx, w, a, m.namespace)
		if err != nil {
			return matchError(err)
		}
		if ok {
			if ok, err = m.conditions.matches(ctx, w, a, "admit"); err != nil {
				return err
			}
		}
		key := w.config + "/" + w.name
		if !ok || (reinvoke && !state.again.Has(key)) {
			continue
		}
		changed, err := m.mutate(ctx, w, a, o)
		if changed {
			state.changed()
			if rc != nil {
				rc.SetShouldReinvoke()
			}
		}
		if w.reinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			if state.invoked == nil {
				state.invoked = sets.New[string]()
			}
			state.invoked.Insert(key)
		}
		if err != nil {
			if err := m.outcome(ctx, w, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// mutate calls one webhook and applies its patch to the request's object
// in place (defaulting it with o's defaulter, as upstream); it reports
// whether the object changed.
func (m *MutatingWebhook) mutate(ctx context.Context, w *webhookSpec, a admission.Attributes, o admission.ObjectInterfaces) (bool, error) {
	resp, err := m.call(ctx, w, a, true)
	if err != nil || len(resp.Patch) == 0 {
		return false, err
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return false, &callFailure{webhook: w.name, reason: fmt.Errorf("received undecodable patch in webhook response: %w", err)}
	}
	if len(patch) == 0 {
		return false, nil
	}
	obj := a.GetObject()
	if obj == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", w.name))
	}
	if resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return false, &callFailure{webhook: w.name, reason: fmt.Errorf("unsupported patch type %q", resp.PatchType)}
	}
	before, err := requestObject(obj, a)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	after, err := patch.Apply(before)
	if err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q: apply patch: %w", w.name, err))
	}
	patched, ok := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	if !ok {
		return false, apierrors.NewInternalError(fmt.Errorf("cannot patch a %T", obj))
	}
	if err := json.Unmarshal(after, patched); err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q: decode patched object: %w", w.name, err))
	}
	patched.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	if o != nil && o.GetObjectDefaulter() != nil {
		o.GetObjectDefaulter().Default(patched)
	}
	changed := !apiequality.Semantic.DeepEqual(obj, patched)
	// The apiserver holds obj: replace its content in place.
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(patched).Elem())
	return changed, nil
}

// ValidatingWebhook calls the ValidatingWebhookConfigurations' matching
// webhooks in parallel; any refusal (or failure under failurePolicy Fail)
// refuses the request.
type ValidatingWebhook struct {
	*admission.Handler
	webhookBase
	lister admissionlisters.ValidatingWebhookConfigurationLister
}

var _ admission.ValidationInterface = (*ValidatingWebhook)(nil)

// NewValidatingWebhook validates cfg and returns the plugin.
func NewValidatingWebhook(cfg WebhookConfig) (*ValidatingWebhook, error) {
	if cfg.Validating == nil {
		return nil, fmt.Errorf("%s: Config.Validating must be set: %w", ValidatingWebhookName, errdefs.ErrInvalidArgument)
	}
	b, err := newWebhookBase(cfg)
	if err != nil {
		return nil, err
	}
	return &ValidatingWebhook{
		Handler:     admission.NewHandler(admission.Create, admission.Update, admission.Delete, admission.Connect),
		webhookBase: b,
		lister:      cfg.Validating,
	}, nil
}

// Validate runs the validating webhooks; the first error in configuration
// order is returned.
func (v *ValidatingWebhook) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	cfgs, err := v.lister.List(labels.Everything())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	sort.Slice(cfgs, func(i, j int) bool { return cfgs[i].Name < cfgs[j].Name })
	var hooks []*webhookSpec
	for _, c := range cfgs {
		for _, w := range c.Webhooks {
			s := &webhookSpec{config: c.Name, name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules,
				failurePolicy: admissionregistrationv1.Fail, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
				sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, reviewVersions: w.AdmissionReviewVersions,
				matchConditions: w.MatchConditions}
			if w.FailurePolicy != nil {
				s.failurePolicy = *w.FailurePolicy
			}
			ok, err := webhookMatches(ctx, s, a, v.namespace)
			if err != nil {
				return matchError(err)
			}
			if ok {
				if ok, err = v.conditions.matches(ctx, s, a, "validate"); err != nil {
					return err
				}
			}
			if ok {
				hooks = append(hooks, s)
			}
		}
	}
	errs := make([]error, len(hooks))
	var wg sync.WaitGroup
	for i, w := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := v.call(ctx, w, a, false); err != nil {
				errs[i] = v.outcome(ctx, w, err)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
