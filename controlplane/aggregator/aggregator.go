// Package aggregator is berth's API aggregation layer (kube-aggregator's
// job in kube-apiserver): it keeps the APIServices of berth's own
// group-versions (local, served in process), proxies the requests for the
// group-versions of service-backed APIServices to their extension
// apiservers, with the caller's identity in the front-proxy headers and
// the front-proxy client certificate, runs kube-aggregator's availability
// controllers (the Available condition) and publishes the extension groups
// in discovery. It also keeps kube-system/extension-apiserver-authentication,
// the configuration extension apiservers read to trust proxied requests.
package aggregator

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	apiservicelisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
	localavailability "k8s.io/kube-aggregator/pkg/controllers/status/local"
	availabilitymetrics "k8s.io/kube-aggregator/pkg/controllers/status/metrics"
	"k8s.io/kube-aggregator/pkg/controllers/status/remote"

	"berth/internal/errdefs"
)

// Config configures the aggregator.
type Config struct {
	// Client reaches this apiserver (the loopback client).
	Client *rest.Config
	// Local are the group-versions served in process: each gets a local
	// APIService (created at start, as kube-apiserver's autoregistration).
	Local []schema.GroupVersion
	// FrontProxyClientCertPEM and FrontProxyClientKeyPEM are presented to
	// extension apiservers; FrontProxyCAPEM signed them.
	FrontProxyClientCertPEM, FrontProxyClientKeyPEM, FrontProxyCAPEM []byte
	// ClientCAPEM is the CA of client certificates (client-ca-file).
	ClientCAPEM []byte
	// FrontProxyAllowedNames are the common names extension apiservers
	// accept from the front proxy (requestheader-allowed-names).
	FrontProxyAllowedNames []string
	// Logger; nil discards.
	Logger *slog.Logger
}

// Aggregator serves the service-backed APIServices. Build it with New,
// hand it to the apiserver (it answers "no extension apiserver" until its
// caches have synced) and run it with Run.
type Aggregator struct {
	cfg       Config
	log       *slog.Logger
	kube      kubernetes.Interface
	agg       aggregatorclient.Interface
	kubeInf   informers.SharedInformerFactory
	aggInf    aggregatorinformers.SharedInformerFactory
	services  corelisters.ServiceLister
	slices    proxy.EndpointSliceGetter
	apiSvcs   apiservicelisters.APIServiceLister
	synced    []cache.InformerSynced
	remoteCtl *remote.AvailableConditionController
	localCtl  *localavailability.AvailableConditionController
	autoreg   interface{ Run(int, <-chan struct{}) }

	mu         sync.Mutex
	transports map[string]cachedTransport // by APIService name
	discovery  map[string]cachedDiscovery // by APIService name
	ready      bool
}

// New validates cfg and builds the aggregator.
func New(cfg Config) (*Aggregator, error) {
	if cfg.Client == nil || len(cfg.FrontProxyClientCertPEM) == 0 || len(cfg.FrontProxyClientKeyPEM) == 0 {
		return nil, fmt.Errorf("aggregator: Client and the front-proxy client certificate are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	kube, err := kubernetes.NewForConfig(cfg.Client)
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	agg, err := aggregatorclient.NewForConfig(cfg.Client)
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	a := &Aggregator{
		cfg: cfg, log: cfg.Logger, kube: kube, agg: agg,
		kubeInf: informers.NewSharedInformerFactory(kube, 0),
		// Resyncing, as kube-aggregator's: the availability controllers
		// recheck every APIService every 30 s on resyncs.
		aggInf:     aggregatorinformers.NewSharedInformerFactory(agg, 5*time.Minute),
		transports: map[string]cachedTransport{},
		discovery:  map[string]cachedDiscovery{},
	}
	svcInf := a.kubeInf.Core().V1().Services()
	sliceInf := a.kubeInf.Discovery().V1().EndpointSlices()
	apiSvcInf := a.aggInf.Apiregistration().V1().APIServices()
	a.services, a.apiSvcs = svcInf.Lister(), apiSvcInf.Lister()
	if a.slices, err = proxy.NewEndpointSliceIndexerGetter(sliceInf); err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	a.synced = []cache.InformerSynced{svcInf.Informer().HasSynced, sliceInf.Informer().HasSynced, apiSvcInf.Informer().HasSynced}
	metrics := availabilitymetrics.New()
	certKey := func() ([]byte, []byte) { return cfg.FrontProxyClientCertPEM, cfg.FrontProxyClientKeyPEM }
	if a.remoteCtl, err = remote.New(apiSvcInf, svcInf, sliceInf, agg.ApiregistrationV1(), nil, certKey, resolver{a}, metrics); err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	if a.localCtl, err = localavailability.New(apiSvcInf, agg.ApiregistrationV1(), metrics); err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	reg := autoregister.NewAutoRegisterController(apiSvcInf, agg.ApiregistrationV1())
	for _, gv := range cfg.Local {
		if svc := localAPIService(gv); svc != nil {
			reg.AddAPIServiceToSyncOnStart(svc)
		}
	}
	a.autoreg = reg
	// Drop cached transports and discovery of changed APIServices.
	if _, err := apiSvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { a.forget(obj) },
		DeleteFunc: a.forget,
	}); err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	return a, nil
}

// Run starts the informers and the controllers, writes the front-proxy
// trust configuration, and runs until ctx ends.
func (a *Aggregator) Run(ctx context.Context) error {
	a.kubeInf.Start(ctx.Done())
	a.aggInf.Start(ctx.Done())
	defer a.kubeInf.Shutdown()
	defer a.aggInf.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return ctx.Err()
	}
	a.mu.Lock()
	a.ready = true
	a.mu.Unlock()
	if err := a.ensureLocalUnmanaged(ctx); err != nil {
		return err
	}
	go a.autoreg.Run(2, ctx.Done())
	go a.localCtl.Run(2, ctx.Done())
	go a.remoteCtl.Run(5, ctx.Done())
	// As kube-apiserver's cluster authentication trust controller: written
	// at start and checked every minute.
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		if err := a.writeAuthenticationConfigMap(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("writing kube-system/extension-apiserver-authentication", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// apiService returns the service-backed APIService serving gv, nil when
// gv is served here, by nothing, or the caches have not synced yet.
func (a *Aggregator) apiService(gv schema.GroupVersion) *apiregistrationv1.APIService {
	a.mu.Lock()
	ready := a.ready
	a.mu.Unlock()
	if !ready {
		return nil
	}
	svc, err := a.apiSvcs.Get(gv.Version + "." + gv.Group)
	if err != nil || svc.Spec.Service == nil {
		return nil
	}
	return svc
}

func (a *Aggregator) forget(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	svc, ok := obj.(*apiregistrationv1.APIService)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.transports, svc.Name)
	delete(a.discovery, svc.Name)
}

// resolver finds a ready endpoint of an APIService's Service from its
// EndpointSlices (kube-apiserver's --enable-aggregator-routing: berth
// does not route cluster IPs from the server).
type resolver struct{ a *Aggregator }

// ResolveEndpoint implements kube-aggregator's ServiceResolver.
func (r resolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveEndpoint(r.a.services, r.a.slices, namespace, name, port)
}
