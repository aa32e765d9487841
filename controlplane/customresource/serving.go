// Package customresource serves the custom resources of
// apiextensions.k8s.io/v1 CustomResourceDefinitions behind berth's REST
// layer (controlplane/apiserver), as upstream's apiextensions-apiserver
// does: Serving is the apiserver's Dynamic, building for each CRD, on
// first use, one store per version over the same etcd keys (unstructured
// JSON in the storage version, converted on read by the CRD's conversion:
// None, or a Webhook), with upstream's strategy (structural schema
// validation, x-kubernetes-validations CEL rules, status and scale
// subresources, selectable fields), defaulting and pruning on decode,
// printer columns, and managed fields for server-side apply. A CRD whose
// spec or accepted names change gets new stores; the old ones are torn
// down once in-flight requests had time to finish.
//
// Run also runs upstream's CRD controllers on the loopback client: names
// (NamesAccepted), Established, NonStructuralSchema,
// KubernetesAPIApprovalPolicyConformant and the finalizer that deletes a
// deleted CRD's objects before the CRD goes.
package customresource

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	clientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	externalinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/apiapproval"
	"k8s.io/apiextensions-apiserver/pkg/controller/establish"
	"k8s.io/apiextensions-apiserver/pkg/controller/finalizer"
	"k8s.io/apiextensions-apiserver/pkg/controller/nonstructuralschema"
	"k8s.io/apiextensions-apiserver/pkg/controller/status"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"berth/controlplane/apiserver"
	"berth/internal/errdefs"
)

// teardownDelay is how long replaced stores keep serving the requests
// that already hold them before their watch caches stop.
const teardownDelay = 10 * time.Second

// Config configures Serving.
type Config struct {
	// Client reaches the apiserver (the loopback), for the CRD informer
	// and the CRD controllers' status writes.
	Client *rest.Config
	// Storage gives the REST options of a custom resource
	// (storage.Factory.UnstructuredRESTOptions).
	Storage func(schema.GroupResource) (generic.RESTOptions, error)
	// ServiceResolver reaches conversion webhooks given as a Service; nil:
	// https://NAME.NAMESPACE.svc:PORT.
	ServiceResolver webhook.ServiceResolver
	// StaticModels are the OpenAPI definitions of the built-in types;
	// their metadata models complete each CRD's types for server-side
	// apply (nil: apply deduces types from the objects).
	StaticModels map[string]*spec.Schema
	Logger       *slog.Logger
}

// Serving serves the custom resources; it implements apiserver.Dynamic.
type Serving struct {
	cfg        Config
	client     clientset.Interface
	informers  externalinformers.SharedInformerFactory
	informer   cache.SharedIndexInformer
	lister     listers.CustomResourceDefinitionLister
	converters *conversion.CRConverterFactory
	metaModels map[string]*spec.Schema
	establish  *establish.EstablishingController

	mu     sync.Mutex
	served map[types.UID]*served
}

var _ apiserver.Dynamic = (*Serving)(nil)

// New validates cfg and builds Serving; Run starts its informer and controllers.
func New(cfg Config) (*Serving, error) {
	if cfg.Client == nil || cfg.Storage == nil {
		return nil, fmt.Errorf("customresource: Client and Storage are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	client, err := clientset.NewForConfig(cfg.Client)
	if err != nil {
		return nil, fmt.Errorf("customresource: %w", err)
	}
	resolver := cfg.ServiceResolver
	if resolver == nil {
		resolver = webhook.NewDefaultServiceResolver()
	}
	converters, err := conversion.NewCRConverterFactory(resolver, nil)
	if err != nil {
		return nil, fmt.Errorf("customresource: %w", err)
	}
	factory := externalinformers.NewSharedInformerFactory(client, 0)
	crds := factory.Apiextensions().V1().CustomResourceDefinitions()
	s := &Serving{
		cfg: cfg, client: client, informers: factory, informer: crds.Informer(), lister: crds.Lister(),
		converters: converters, served: map[types.UID]*served{},
		metaModels: map[string]*spec.Schema{},
	}
	for name, m := range cfg.StaticModels {
		if strings.HasPrefix(name, "io.k8s.apimachinery.pkg.apis.meta.v1.") {
			s.metaModels[name] = m
		}
	}
	s.establish = establish.NewEstablishingController(crds, client.ApiextensionsV1())
	if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			s.changed(old.(*apiextensionsv1.CustomResourceDefinition), cur.(*apiextensionsv1.CustomResourceDefinition))
		},
		DeleteFunc: func(any) { s.removeDead() },
	}); err != nil {
		return nil, fmt.Errorf("customresource: %w", err)
	}
	return s, nil
}

// Run runs the CRD informer and controllers until ctx ends, then tears
// every store down.
func (s *Serving) Run(ctx context.Context) error {
	crds := s.informers.Apiextensions().V1().CustomResourceDefinitions()
	v1 := s.client.ApiextensionsV1()
	naming := status.NewNamingConditionController(klog.Background(), crds, v1)
	structural := nonstructuralschema.NewConditionController(crds, v1)
	approval := apiapproval.NewKubernetesAPIApprovalPolicyConformantConditionController(crds, v1)
	final := finalizer.NewCRDFinalizer(crds, v1, s)
	s.informers.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, run := range []func(){
		func() { naming.RunWithContext(ctx) },
		func() { s.establish.RunWithContext(ctx) },
		func() { structural.RunWithContext(5, ctx) },
		func() { approval.RunWithContext(5, ctx) },
		func() { final.RunWithContext(5, ctx) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	<-ctx.Done()
	wg.Wait()
	s.informers.Shutdown()
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, sv := range s.served {
		sv.close()
		delete(s.served, uid)
	}
	return nil
}

// HasSynced reports whether the CRD informer has listed once.
func (s *Serving) HasSynced() bool { return s.informer.HasSynced() }

// Lookup implements apiserver.Dynamic.
func (s *Serving) Lookup(gv schema.GroupVersion, resource string) *apiserver.Resource {
	crd, err := s.lister.Get(resource + "." + gv.Group)
	if err != nil || !apihelpers.HasServedCRDVersion(crd, gv.Version) {
		return nil
	}
	// Served once its names are accepted, as upstream (Established
	// follows at once).
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) && !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		return nil
	}
	sv, err := s.servedFor(crd)
	if err != nil {
		s.cfg.Logger.Warn("cannot serve custom resource", "crd", crd.Name, "err", err)
		return nil
	}
	return sv.byVersion[gv.Version]
}

// Groups implements apiserver.Dynamic: the groups of Established CRDs,
// each with its served versions in upstream's priority order.
func (s *Serving) Groups() []apiserver.DynamicGroup {
	byGroup := map[string]map[string]bool{}
	for _, crd := range s.established() {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			if byGroup[crd.Spec.Group] == nil {
				byGroup[crd.Spec.Group] = map[string]bool{}
			}
			byGroup[crd.Spec.Group][v.Name] = true
		}
	}
	out := make([]apiserver.DynamicGroup, 0, len(byGroup))
	for g, vs := range byGroup {
		dg := apiserver.DynamicGroup{Name: g}
		for v := range vs {
			dg.Versions = append(dg.Versions, v)
		}
		sort.Slice(dg.Versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(dg.Versions[i], dg.Versions[j]) > 0
		})
		out = append(out, dg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Resources implements apiserver.Dynamic.
func (s *Serving) Resources(gv schema.GroupVersion) []*apiserver.Resource {
	var out []*apiserver.Resource
	for _, crd := range s.established() {
		if crd.Spec.Group != gv.Group || !apihelpers.HasServedCRDVersion(crd, gv.Version) {
			continue
		}
		sv, err := s.servedFor(crd)
		if err != nil {
			s.cfg.Logger.Warn("cannot serve custom resource", "crd", crd.Name, "err", err)
			continue
		}
		if r := sv.byVersion[gv.Version]; r != nil {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// established lists the Established CRDs.
func (s *Serving) established() []*apiextensionsv1.CustomResourceDefinition {
	all, err := s.lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range all {
		if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			out = append(out, crd)
		}
	}
	return out
}

// servedFor returns crd's stores, building them at first use or after its
// spec or accepted names changed.
func (s *Serving) servedFor(crd *apiextensionsv1.CustomResourceDefinition) (*served, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.served[crd.UID]; ok && current(sv, crd) {
		return sv, nil
	}
	// Build from the newest CRD the informer has.
	latest, err := s.lister.Get(crd.Name)
	if err != nil {
		return nil, err
	}
	if old, ok := s.served[latest.UID]; ok {
		if current(old, latest) {
			return old, nil
		}
		s.removeLocked(latest.UID)
	}
	sv, err := s.build(latest)
	if err != nil {
		return nil, err
	}
	s.served[latest.UID] = sv
	return sv, nil
}

func current(sv *served, crd *apiextensionsv1.CustomResourceDefinition) bool {
	return equality.Semantic.DeepEqual(&crd.Spec, sv.spec) && equality.Semantic.DeepEqual(&crd.Status.AcceptedNames, sv.acceptedNames)
}

// changed drops stale stores and queues a CRD whose names were accepted
// for the Established condition, as upstream's handler does.
func (s *Serving) changed(old, cur *apiextensionsv1.CustomResourceDefinition) {
	if !apihelpers.IsCRDConditionTrue(cur, apiextensionsv1.Established) && apihelpers.IsCRDConditionTrue(cur, apiextensionsv1.NamesAccepted) {
		s.establish.QueueCRD(cur.Name, 0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old.UID != cur.UID {
		s.removeLocked(old.UID)
	}
	if sv, ok := s.served[cur.UID]; ok && !current(sv, cur) {
		s.removeLocked(cur.UID)
	}
}

// removeDead drops the stores of deleted CRDs.
func (s *Serving) removeDead() {
	all, err := s.lister.List(labels.Everything())
	if err != nil {
		return
	}
	live := map[types.UID]bool{}
	for _, crd := range all {
		live[crd.UID] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid := range s.served {
		if !live[uid] {
			s.removeLocked(uid)
		}
	}
}

// removeLocked forgets a CRD's stores and tears them down after teardownDelay.
func (s *Serving) removeLocked(uid types.UID) {
	sv, ok := s.served[uid]
	if !ok {
		return
	}
	delete(s.served, uid)
	time.AfterFunc(teardownDelay, sv.close)
}

// GetCustomResourceListerCollectionDeleter implements
// finalizer.CRClientGetter: the stored version's store.
func (s *Serving) GetCustomResourceListerCollectionDeleter(crd *apiextensionsv1.CustomResourceDefinition) (finalizer.ListerCollectionDeleter, error) {
	sv, err := s.servedFor(crd)
	if err != nil {
		return nil, err
	}
	return sv.storage, nil
}
