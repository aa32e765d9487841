package admission

import (
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Chain is the admission chain: Admit runs every mutating plugin in order,
// Validate every validating plugin in order.
type Chain interface {
	admission.MutationInterface
	admission.ValidationInterface
}

// ChainConfig configures every plugin of the chain.
type ChainConfig struct {
	NamespaceLifecycle NamespaceLifecycleConfig
	LimitRanger        LimitRangerConfig
	ServiceAccount     ServiceAccountConfig
	NodeRestriction    NodeRestrictionConfig
	PodSecurity        PodSecurityConfig
	Webhooks           WebhookConfig
	ResourceQuota      ResourceQuotaConfig
	RuntimeClass       RuntimeClassConfig
	Priority           PriorityConfig
}

// ConfigFromInformers fills a ChainConfig from a shared informer factory
// (listers of namespaces, pods, service accounts, limit ranges, resource
// quotas, runtime classes, webhook configurations, and the services and endpoint slices
// webhooks' clientConfig.service resolve through) and a client for live lookups and
// quota status writes. Call it before factory.Start; the apiserver must
// serve every listed resource, or the informers never sync.
func ConfigFromInformers(factory informers.SharedInformerFactory, client kubernetes.Interface) ChainConfig {
	core := factory.Core().V1()
	reg := factory.Admissionregistration().V1()
	return ChainConfig{
		NamespaceLifecycle: NamespaceLifecycleConfig{Namespaces: core.Namespaces().Lister(), Client: client},
		LimitRanger:        LimitRangerConfig{LimitRanges: core.LimitRanges().Lister()},
		ServiceAccount:     ServiceAccountConfig{ServiceAccounts: core.ServiceAccounts().Lister(), Client: client},
		NodeRestriction:    NodeRestrictionConfig{Pods: core.Pods().Lister()},
		PodSecurity:        PodSecurityConfig{Namespaces: core.Namespaces().Lister(), Pods: core.Pods().Lister(), Client: client},
		Webhooks: WebhookConfig{
			Mutating:   reg.MutatingWebhookConfigurations().Lister(),
			Validating: reg.ValidatingWebhookConfigurations().Lister(),
			Namespaces: core.Namespaces().Lister(),
			Client:     client,
			ResolveService: EndpointServiceResolver(core.Services().Lister(),
				factory.Discovery().V1().EndpointSlices().Lister()),
		},
		ResourceQuota: ResourceQuotaConfig{Quotas: core.ResourceQuotas().Lister(), Client: client},
		RuntimeClass:  RuntimeClassConfig{RuntimeClasses: factory.Node().V1().RuntimeClasses().Lister(), Client: client},
		Priority:      PriorityConfig{PriorityClasses: factory.Scheduling().V1().PriorityClasses().Lister(), Client: client},
	}
}

// NewChain builds the plugins in upstream's order — NamespaceLifecycle,
// LimitRanger, ServiceAccount, NodeRestriction, PodSecurity, Priority,
// DefaultTolerationSeconds, StorageObjectInUseProtection, RuntimeClass,
// MutatingAdmissionWebhook,
// ValidatingAdmissionWebhook, ResourceQuota — and chains them, with
// upstream's reinvocation (NewReinvocationHandler).
func NewChain(cfg ChainConfig) (Chain, error) {
	lifecycle, err := NewNamespaceLifecycle(cfg.NamespaceLifecycle)
	if err != nil {
		return nil, err
	}
	limits, err := NewLimitRanger(cfg.LimitRanger)
	if err != nil {
		return nil, err
	}
	sa, err := NewServiceAccount(cfg.ServiceAccount)
	if err != nil {
		return nil, err
	}
	nodes, err := NewNodeRestriction(cfg.NodeRestriction)
	if err != nil {
		return nil, err
	}
	pss, err := NewPodSecurity(cfg.PodSecurity)
	if err != nil {
		return nil, err
	}
	mutating, err := NewMutatingWebhook(cfg.Webhooks)
	if err != nil {
		return nil, err
	}
	validating, err := NewValidatingWebhook(cfg.Webhooks)
	if err != nil {
		return nil, err
	}
	rq, err := NewResourceQuota(cfg.ResourceQuota)
	if err != nil {
		return nil, err
	}
	rc, err := NewRuntimeClass(cfg.RuntimeClass)
	if err != nil {
		return nil, err
	}
	priority, err := NewPriority(cfg.Priority)
	if err != nil {
		return nil, err
	}
	return NewReinvocationHandler(admission.NewChainHandler(
		lifecycle, limits, sa, nodes, pss, priority, NewDefaultTolerationSeconds(), NewStorageObjectInUseProtection(), rc,
		mutating, validating, rq,
	)), nil
}
