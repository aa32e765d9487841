package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	berthadmission "berth/controlplane/admission"
	"berth/controlplane/controller"
	"berth/controlplane/controller/resourcequota"
)

// AdmissionPlugins are the admission plugins the server knows, by their
// upstream names, in the order upstream runs them.
var AdmissionPlugins = berthadmission.Plugins

// DefaultAdmissionPlugins are enabled unless disabled: every plugin, as
// upstream's recommended set.
var DefaultAdmissionPlugins = berthadmission.Plugins

// admissionReadyTimeout bounds how long a request waits for the admission
// informers' first sync, as upstream's plugins wait for readiness.
const admissionReadyTimeout = 10 * time.Second

// validateAdmissionPlugins checks the enable and disable lists.
func validateAdmissionPlugins(enable, disable []string) error {
	for _, lst := range []struct {
		flag  string
		names []string
	}{{"enable admission plugins", enable}, {"disable admission plugins", disable}} {
		for _, n := range lst.names {
			if !slices.Contains(AdmissionPlugins, n) {
				return fmt.Errorf("server config: %s: unknown plugin %q, want some of %v", lst.flag, n, AdmissionPlugins)
			}
		}
	}
	for _, n := range enable {
		if slices.Contains(disable, n) {
			return fmt.Errorf("server config: admission plugin %q is both enabled and disabled", n)
		}
	}
	return nil
}

// EnabledAdmissionPlugins are the plugins this server runs, in upstream
// order: the defaults plus EnableAdmissionPlugins minus DisableAdmissionPlugins.
func (c *Config) EnabledAdmissionPlugins() []string {
	var out []string
	for _, n := range AdmissionPlugins {
		on := slices.Contains(DefaultAdmissionPlugins, n) || slices.Contains(c.EnableAdmissionPlugins, n)
		if on && !slices.Contains(c.DisableAdmissionPlugins, n) {
			out = append(out, n)
		}
	}
	return out
}

// admissionSetup is the admission chain with what it needs running: the
// shared informers its plugins list from and, with ResourceQuota, the
// quota usage controller.
type admissionSetup struct {
	chain admission.Interface
	comps []component
}

// newAdmission builds the enabled plugins on informers of the loopback
// client. The informers start (and the quota controller runs) as an
// idempotent component in every server: charges are compare-and-swap
// writes and the controller recomputes usage from the objects, so several
// servers may run them together.
func (s *Server) newAdmission(rc *rest.Config, namespaces *genericregistry.Store, authz authorizer.Authorizer) (*admissionSetup, error) {
	enabled := s.cfg.EnabledAdmissionPlugins()
	if len(enabled) == 0 {
		return &admissionSetup{}, nil
	}
	src := rest.CopyConfig(rc)
	src.UserAgent = "berth-admission"
	client, err := kubernetes.NewForConfig(src)
	if err != nil {
		return nil, fmt.Errorf("server: admission client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	cfg := berthadmission.ConfigFromInformers(factory, client)
	cfg.NamespaceLifecycle.Namespaces = storeNamespaces{store: namespaces}
	cfg.Webhooks.Logger = s.cfg.Logger.With("component", "admission")
	var plugins []admission.Interface
	setup := &admissionSetup{}
	// Closed when the informers' component stops: ends the policy
	// plugin's background work.
	stop := make(chan struct{})
	for _, name := range enabled {
		var p admission.Interface
		var err error
		if name == berthadmission.ValidatingAdmissionPolicyName {
			p, err = newValidatingPolicy(src, client, factory, authz, stop)
		} else {
			p, err = berthadmission.NewPlugin(name, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("server: admission plugin %s: %w", name, err)
		}
		if name == berthadmission.ResourceQuotaName {
			ctrl, err := resourcequota.New(resourcequota.Config{Config: controller.Config{
				Client: client, Informers: factory, Logger: s.cfg.Logger.With("component", "resourcequota"),
			}})
			if err != nil {
				return nil, err
			}
			setup.comps = append(setup.comps, component{name: "resourcequota", run: ctrl.Run})
		}
		plugins = append(plugins, p)
	}
	setup.chain = readyChain{chain: berthadmission.NewChain(plugins...), synced: informersSynced(factory)}
	setup.comps = append([]component{{name: "admission-informers", run: func(ctx context.Context) error {
		factory.Start(ctx.Done())
		<-ctx.Done()
		close(stop)
		factory.Shutdown()
		return nil
	}}}, setup.comps...)
	return setup, nil
}

// newValidatingPolicy builds the ValidatingAdmissionPolicy plugin: params
// are watched through a dynamic client, their kinds mapped through
// discovery (refreshed when a kind is not found, as for a new CRD).
func newValidatingPolicy(rc *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	authz authorizer.Authorizer, stop <-chan struct{}) (admission.Interface, error) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return berthadmission.NewValidatingAdmissionPolicy(berthadmission.ValidatingPolicyConfig{
		Informers: factory, Client: client, Dynamic: dyn, Authorizer: authz, Stop: stop,
		RESTMapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())),
	})
}

// readyChain waits for the informers' first sync before admitting, as
// upstream's plugins do, so no request is admitted on an empty cache.
type readyChain struct {
	chain  admission.Interface
	synced []cache.InformerSynced
}

// Handles implements admission.Interface.
func (c readyChain) Handles(op admission.Operation) bool { return c.chain.Handles(op) }

// Admit implements admission.MutationInterface.
func (c readyChain) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if err := c.wait(ctx, a); err != nil {
		return err
	}
	if m, ok := c.chain.(admission.MutationInterface); ok {
		return m.Admit(ctx, a, o)
	}
	return nil
}

// Validate implements admission.ValidationInterface.
func (c readyChain) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if err := c.wait(ctx, a); err != nil {
		return err
	}
	if v, ok := c.chain.(admission.ValidationInterface); ok {
		return v.Validate(ctx, a, o)
	}
	return nil
}

// wait blocks until every informer has synced, or refuses the request.
func (c readyChain) wait(ctx context.Context, a admission.Attributes) error {
	ctx, cancel := context.WithTimeout(ctx, admissionReadyTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	return nil
}

// informersSynced are the HasSynced of every informer the plugins list from.
func informersSynced(f informers.SharedInformerFactory) []cache.InformerSynced {
	core, reg := f.Core().V1(), f.Admissionregistration().V1()
	var out []cache.InformerSynced
	for _, i := range []cache.SharedIndexInformer{
		core.Namespaces().Informer(), core.LimitRanges().Informer(), core.ServiceAccounts().Informer(),
		core.Pods().Informer(), core.ResourceQuotas().Informer(),
		reg.MutatingWebhookConfigurations().Informer(), reg.ValidatingWebhookConfigurations().Informer(),
		reg.ValidatingAdmissionPolicies().Informer(), reg.ValidatingAdmissionPolicyBindings().Informer(),
		core.Services().Informer(), f.Discovery().V1().EndpointSlices().Informer(),
		f.Node().V1().RuntimeClasses().Informer(),
		f.Networking().V1().IngressClasses().Informer(),
		f.Scheduling().V1().PriorityClasses().Informer(),
	} {
		out = append(out, i.HasSynced)
	}
	return out
}

// storeNamespaces is a namespace lister reading the namespaces store
// itself rather than an informer's cache, so NamespaceLifecycle sees a
// namespace turn terminating the moment it does.
type storeNamespaces struct {
	store *genericregistry.Store
}

var _ corelisters.NamespaceLister = storeNamespaces{}

// storeLookupTimeout bounds one lookup.
const storeLookupTimeout = 10 * time.Second

// List implements corelisters.NamespaceLister.
func (s storeNamespaces) List(sel labels.Selector) ([]*corev1.Namespace, error) {
	ctx, cancel := context.WithTimeout(genericapirequest.WithNamespace(context.Background(), ""), storeLookupTimeout)
	defer cancel()
	obj, err := s.store.List(ctx, &metainternalversion.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*corev1.NamespaceList)
	if !ok {
		return nil, fmt.Errorf("namespaces store listed a %T", obj)
	}
	out := make([]*corev1.Namespace, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// Get implements corelisters.NamespaceLister.
func (s storeNamespaces) Get(name string) (*corev1.Namespace, error) {
	ctx, cancel := context.WithTimeout(genericapirequest.WithNamespace(context.Background(), ""), storeLookupTimeout)
	defer cancel()
	obj, err := s.store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, fmt.Errorf("namespaces store returned a %T", obj)
	}
	return ns, nil
}
