package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"berth/internal/errdefs"
)

// ValidatingAdmissionPolicyName is the plugin's upstream name.
const ValidatingAdmissionPolicyName = validating.PluginName

// ValidatingPolicyConfig configures the ValidatingAdmissionPolicy plugin.
type ValidatingPolicyConfig struct {
	// Informers lists policies, bindings and namespaces; the plugin adds
	// its informers to it, so build the plugin before the factory starts.
	Informers informers.SharedInformerFactory
	// Client looks namespaces up that the informer has not seen yet.
	Client kubernetes.Interface
	// Dynamic watches the parameter resources (any kind a paramKind names).
	Dynamic dynamic.Interface
	// RESTMapper maps a paramKind to its resource.
	RESTMapper meta.RESTMapper
	// Authorizer answers CEL's authorizer variable.
	Authorizer authorizer.UnconditionalAuthorizer
	// Stop ends the plugin's background work (policy compilation, param
	// informers).
	Stop <-chan struct{}
}

// NewValidatingAdmissionPolicy returns upstream's ValidatingAdmissionPolicy
// plugin (k8s.io/apiserver/pkg/admission/plugin/policy/validating), wired
// as kube-apiserver's initializers wire it: it evaluates the CEL
// validations of every policy bound to a request (matchConstraints,
// matchConditions, params from paramRef, variables, messageExpression,
// auditAnnotations, validationActions Deny/Warn/Audit, failurePolicy).
func NewValidatingAdmissionPolicy(cfg ValidatingPolicyConfig) (admission.ValidationInterface, error) {
	if cfg.Informers == nil || cfg.Client == nil || cfg.Dynamic == nil || cfg.RESTMapper == nil || cfg.Authorizer == nil || cfg.Stop == nil {
		return nil, fmt.Errorf("admission: ValidatingAdmissionPolicy: Informers, Client, Dynamic, RESTMapper, Authorizer and Stop are required: %w", errdefs.ErrInvalidArgument)
	}
	p, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("admission: ValidatingAdmissionPolicy: %w", err)
	}
	p.SetExternalKubeInformerFactory(cfg.Informers)
	p.SetExternalKubeClientSet(cfg.Client)
	p.SetDynamicClient(cfg.Dynamic)
	p.SetRESTMapper(cfg.RESTMapper)
	p.SetUnconditionalAuthorizer(cfg.Authorizer)
	p.SetDrainedNotification(cfg.Stop)
	// As kube-apiserver: reviews are not persisted, and no policy may
	// refuse them.
	p.SetExcludedAdmissionResources([]schema.GroupResource{
		{Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
		{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
		{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
		{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
		{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	})
	if err := p.ValidateInitialization(); err != nil {
		return nil, fmt.Errorf("admission: ValidatingAdmissionPolicy: %w", err)
	}
	return p, nil
}
