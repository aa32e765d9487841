package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
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
	// Namespaces gives namespace labels to namespaceSelectors.
	Namespaces corelisters.NamespaceLister
	// ResolveService maps clientConfig.service to a URL; nil means
	// DefaultServiceResolver (https://NAME.NAMESPACE.svc:PORT).
	ResolveService ServiceResolver
	// Logger records calls that failed under failurePolicy Ignore; nil discards.
	Logger *slog.Logger
}

type webhookBase struct {
	namespaces corelisters.NamespaceLister
	resolve    ServiceResolver
	clients    *webhookClients
	log        *slog.Logger
}

func newWebhookBase(cfg WebhookConfig) (webhookBase, error) {
	if cfg.Namespaces == nil {
		return webhookBase{}, fmt.Errorf("webhook admission: Config.Namespaces must be set: %w", errdefs.ErrInvalidArgument)
	}
	b := webhookBase{namespaces: cfg.Namespaces, resolve: cfg.ResolveService, clients: &webhookClients{}, log: cfg.Logger}
	if b.resolve == nil {
		b.resolve = DefaultServiceResolver
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b, nil
}

// dryRunRefused is set when a dry-run request meets a webhook with side effects.
func dryRunRefused(a admission.Attributes, w *webhookSpec) error {
	if !a.IsDryRun() || w.sideEffects == nil {
		return nil
	}
	switch *w.sideEffects {
	case admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun:
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q has side effects and does not support dry run", w.name))
}

// call invokes one matching webhook and applies its failure policy: a nil
// response with a nil error means the failure was ignored.
func (b *webhookBase) call(ctx context.Context, w *webhookSpec, a admission.Attributes) (*admissionv1.AdmissionResponse, error) {
	if err := dryRunRefused(a, w); err != nil {
		return nil, err
	}
	resp, err := callWebhook(ctx, w, a, b.clients, b.resolve)
	if err != nil {
		if w.failOpen() {
			b.log.Warn("webhook call failed; failurePolicy Ignore", "configuration", w.config, "webhook", w.name, "err", err)
			return nil, nil
		}
		return nil, callFailed(w.name, err)
	}
	for _, warn := range resp.Warnings {
		warning.AddWarning(ctx, "", warn)
	}
	for k, v := range resp.AuditAnnotations {
		_ = a.AddAnnotation(w.name+"/"+k, v)
	}
	if !resp.Allowed {
		return nil, denied(w.name, resp.Result)
	}
	return resp, nil
}

// MutatingWebhook calls the MutatingWebhookConfigurations' webhooks in
// order (configurations by name, webhooks in listed order) and applies
// their JSONPatch responses. Webhooks with reinvocationPolicy IfNeeded are
// called once more when a later webhook (or, when the apiserver reinvokes
// the chain, a later plugin) changed the object after them.
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
				reinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy}
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

// Admit runs the mutating webhooks.
func (m *MutatingWebhook) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	hooks, err := m.webhooks()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var matching []*webhookSpec
	for i := range hooks {
		ok, err := webhookMatches(&hooks[i], a, m.namespaces)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if ok {
			matching = append(matching, &hooks[i])
		}
	}
	if len(matching) == 0 {
		return nil
	}
	rc := a.GetReinvocationContext()
	if rc != nil && rc.IsReinvoke() {
		// The chain is being reinvoked: call the IfNeeded webhooks once more
		// if some plugin changed the object after this one last ran.
		last, _ := rc.Value(MutatingWebhookName).([]byte)
		now, _ := encodeObject(a.GetObject(), a)
		if last != nil && bytes.Equal(last, now) {
			return nil
		}
		var again []*webhookSpec
		for _, w := range matching {
			if w.reinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
				again = append(again, w)
			}
		}
		_, err := m.runAll(ctx, again, a, o)
		return err
	}

	changedAfter, err := m.runAll(ctx, matching, a, o)
	if err != nil {
		return err
	}
	var again []*webhookSpec
	for i, w := range matching {
		if w.reinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy && changedAfter[i] {
			again = append(again, w)
		}
	}
	if len(again) > 0 {
		if _, err := m.runAll(ctx, again, a, o); err != nil {
			return err
		}
	}
	if rc != nil {
		snap, _ := encodeObject(a.GetObject(), a)
		rc.SetValue(MutatingWebhookName, snap)
	}
	return nil
}

// runAll calls the webhooks in order, applying patches (and, as upstream,
// defaulting the patched object with o's defaulter when o is given);
// changedAfter[i] reports whether a later webhook in this run changed the object.
func (m *MutatingWebhook) runAll(ctx context.Context, hooks []*webhookSpec, a admission.Attributes, o admission.ObjectInterfaces) ([]bool, error) {
	changedAfter := make([]bool, len(hooks))
	for i, w := range hooks {
		resp, err := m.call(ctx, w, a)
		if err != nil {
			return nil, err
		}
		if resp == nil || len(resp.Patch) == 0 {
			continue
		}
		changed, err := applyPatch(a, resp)
		if err != nil {
			if w.failOpen() {
				m.log.Warn("webhook patch failed; failurePolicy Ignore", "configuration", w.config, "webhook", w.name, "err", err)
				continue
			}
			return nil, callFailed(w.name, err)
		}
		if changed && o != nil && o.GetObjectDefaulter() != nil {
			o.GetObjectDefaulter().Default(a.GetObject())
		}
		if changed {
			for j := 0; j < i; j++ {
				changedAfter[j] = true
			}
		}
	}
	return changedAfter, nil
}

// applyPatch applies a JSONPatch response to the request's object in place
// and reports whether it changed anything.
func applyPatch(a admission.Attributes, resp *admissionv1.AdmissionResponse) (bool, error) {
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return false, fmt.Errorf("unsupported patch type %v", resp.PatchType)
	}
	obj := a.GetObject()
	if obj == nil {
		return false, fmt.Errorf("webhook returned a patch for a request without an object")
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return false, fmt.Errorf("decode patch: %w", err)
	}
	before, err := encodeObject(obj, a)
	if err != nil {
		return false, err
	}
	after, err := patch.Apply(before)
	if err != nil {
		return false, fmt.Errorf("apply patch: %w", err)
	}
	if bytes.Equal(before, after) {
		return false, nil
	}
	if err := decodeInto(obj, after); err != nil {
		return false, err
	}
	return true, nil
}

// decodeInto replaces *obj with the decoded JSON, keeping obj's TypeMeta.
func decodeInto(obj runtime.Object, data []byte) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	fresh := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	if err := json.Unmarshal(data, fresh); err != nil {
		return fmt.Errorf("decode patched object: %w", err)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
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
				sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, reviewVersions: w.AdmissionReviewVersions}
			if w.FailurePolicy != nil {
				s.failurePolicy = *w.FailurePolicy
			}
			ok, err := webhookMatches(s, a, v.namespaces)
			if err != nil {
				return apierrors.NewInternalError(err)
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
			_, errs[i] = v.call(ctx, w, a)
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
