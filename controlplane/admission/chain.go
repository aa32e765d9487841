package admission

import (
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"berth/internal/errdefs"
)

// Plugins are the admission plugins berth knows, by their upstream names, in
// the order upstream runs them.
var Plugins = []string{
	NamespaceLifecycleName,
	LimitRangerName,
	ServiceAccountName,
	NodeRestrictionName,
	PodSecurityName,
	PriorityName,
	DefaultTolerationSecondsName,
	DefaultStorageClassName,
	StorageObjectInUseProtectionName,
	RuntimeClassName,
	DefaultIngressClassName,
	MutatingWebhookName,
	ValidatingAdmissionPolicyName,
	ValidatingWebhookName,
	ResourceQuotaName,
}

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
	StorageClasses     storagelisters.StorageClassLister    // DefaultStorageClass's
	IngressClasses     networkinglisters.IngressClassLister // DefaultIngressClass's
}

// ConfigFromInformers fills a ChainConfig from a shared informer factory
// (listers of namespaces, pods, service accounts, limit ranges, resource
// quotas, runtime classes, priority classes, storage and ingress classes,
// webhook configurations, and the services and endpoint slices
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
		ResourceQuota:  ResourceQuotaConfig{Quotas: core.ResourceQuotas().Lister(), Client: client},
		RuntimeClass:   RuntimeClassConfig{RuntimeClasses: factory.Node().V1().RuntimeClasses().Lister(), Client: client},
		Priority:       PriorityConfig{PriorityClasses: factory.Scheduling().V1().PriorityClasses().Lister(), Client: client},
		StorageClasses: factory.Storage().V1().StorageClasses().Lister(),
		IngressClasses: factory.Networking().V1().IngressClasses().Lister(),
	}
}

// NewPlugin builds the plugin named name (one of Plugins) from cfg, except
// ValidatingAdmissionPolicy: it watches its params through a dynamic client
// and discovery its caller has (NewValidatingAdmissionPolicy).
func NewPlugin(name string, cfg ChainConfig) (admission.Interface, error) {
	switch name {
	case NamespaceLifecycleName:
		return NewNamespaceLifecycle(cfg.NamespaceLifecycle)
	case LimitRangerName:
		return NewLimitRanger(cfg.LimitRanger)
	case ServiceAccountName:
		return NewServiceAccount(cfg.ServiceAccount)
	case NodeRestrictionName:
		return NewNodeRestriction(cfg.NodeRestriction)
	case PodSecurityName:
		return NewPodSecurity(cfg.PodSecurity)
	case PriorityName:
		return NewPriority(cfg.Priority)
	case DefaultTolerationSecondsName:
		return NewDefaultTolerationSeconds(), nil
	case DefaultStorageClassName:
		return NewDefaultStorageClass(cfg.StorageClasses)
	case StorageObjectInUseProtectionName:
		return NewStorageObjectInUseProtection(), nil
	case RuntimeClassName:
		return NewRuntimeClass(cfg.RuntimeClass)
	case DefaultIngressClassName:
		return NewDefaultIngressClass(cfg.IngressClasses)
	case MutatingWebhookName:
		return NewMutatingWebhook(cfg.Webhooks)
	case ValidatingWebhookName:
		return NewValidatingWebhook(cfg.Webhooks)
	case ResourceQuotaName:
		return NewResourceQuota(cfg.ResourceQuota)
	}
	return nil, fmt.Errorf("admission: no plugin %q built from a ChainConfig: %w", name, errdefs.ErrInvalidArgument)
}

// NewChain runs plugins in the order given, with upstream's reinvocation
// (NewReinvocationHandler).
func NewChain(plugins ...admission.Interface) Chain {
	return NewReinvocationHandler(admission.NewChainHandler(plugins...))
}
