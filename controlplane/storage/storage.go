// Package storage builds k8s.io/apiserver storage (the etcd3 store behind a
// watch cache) for the generic registry, over one shared etcd client.
//
// berth's scheme has external versions only, so the storage codec reads and
// writes the served version itself (protobuf in etcd, as upstream).
package storage

import (
	"fmt"
	"time"

	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apiserver/pkg/registry/generic"
	apistorage "k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// DefaultPrefix is the etcd key prefix, as kube-apiserver's.
const DefaultPrefix = "/registry"

// Config configures the storage factory.
type Config struct {
	// Client is the shared etcd client (closed by the caller after Close).
	Client *kubernetes.Client
	// Scheme knows every stored type.
	Scheme *runtime.Scheme
	// Prefix is the etcd key prefix; default DefaultPrefix.
	Prefix string
	// CompactionInterval is how often old etcd revisions are compacted
	// (kube-apiserver's --etcd-compaction-interval); 0 disables compaction.
	CompactionInterval time.Duration
	// EventsHistoryWindow is how long the watch cache keeps events at least; default 75s.
	EventsHistoryWindow time.Duration
	// Transformers encrypt values at rest per resource (see
	// LoadEncryptionConfig); nil stores every value in clear.
	Transformers value.ResourceTransformers
}

// Factory hands out storage per resource. It implements generic.RESTOptionsGetter.
type Factory struct {
	cfg       Config
	codecs    serializer.CodecFactory
	proto     runtime.Serializer
	compactor interface {
		etcd3.Compactor
		Stop()
	}
}

// New validates cfg and starts the compactor (if enabled).
func New(cfg Config) (*Factory, error) {
	if cfg.Client == nil || cfg.Scheme == nil {
		return nil, fmt.Errorf("storage: Client and Scheme are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.EventsHistoryWindow == 0 {
		cfg.EventsHistoryWindow = storagebackend.DefaultEventsHistoryWindow
	}
	f := &Factory{
		cfg:    cfg,
		codecs: serializer.NewCodecFactory(cfg.Scheme),
		proto:  protobuf.NewSerializer(cfg.Scheme, cfg.Scheme),
	}
	if cfg.CompactionInterval > 0 {
		f.compactor = etcd3.NewCompactor(cfg.Client.Client, cfg.CompactionInterval, clock.RealClock{}, func() {})
	}
	return f, nil
}

// Close stops the compactor. Stores are destroyed through their DestroyFunc.
func (f *Factory) Close() {
	if f.compactor != nil {
		f.compactor.Stop()
	}
}

// Codec returns the storage codec for one group/version: protobuf, no conversion.
func (f *Factory) Codec(gv schema.GroupVersion) runtime.Codec {
	return f.codecs.CodecForVersions(f.proto, f.proto, gv, gv)
}

// GetRESTOptions implements generic.RESTOptionsGetter; example's registered
// kind decides the stored version.
func (f *Factory) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	if example == nil {
		return generic.RESTOptions{}, fmt.Errorf("storage for %s: an example object is required: %w", resource, errdefs.ErrInvalidArgument)
	}
	gvks, _, err := f.cfg.Scheme.ObjectKinds(example)
	if err != nil {
		return generic.RESTOptions{}, fmt.Errorf("storage for %s: %w", resource, err)
	}
	return f.restOptions(resource, f.Codec(gvks[0].GroupVersion()), gvks[0].GroupVersion()), nil
}

// UnstructuredRESTOptions are the REST options of custom resources: their
// objects are stored as unstructured JSON, as kube-apiserver stores them
// (a CRD's stores wrap this codec with the CRD's versions and conversion).
func (f *Factory) UnstructuredRESTOptions(resource schema.GroupResource) (generic.RESTOptions, error) {
	return f.restOptions(resource, unstructured.UnstructuredJSONScheme, nil), nil
}

func (f *Factory) restOptions(resource schema.GroupResource, codec runtime.Codec, encodeVersion runtime.GroupVersioner) generic.RESTOptions {
	bc := storagebackend.NewDefaultConfig(f.cfg.Prefix, codec)
	bc.EncodeVersioner = encodeVersion
	bc.EventsHistoryWindow = f.cfg.EventsHistoryWindow
	bc.CompactionInterval = f.cfg.CompactionInterval
	prefix := resource.Resource
	if resource.Group != "" {
		prefix = resource.Group + "/" + resource.Resource
	}
	return generic.RESTOptions{
		StorageConfig: bc.ForResource(resource),
		Decorator:     f.decorate,
		// DELETE's propagationPolicy Orphan and Foreground add the orphan /
		// foregroundDeletion finalizers for the garbage collector, as
		// kube-apiserver does.
		EnableGarbageCollection: true,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          prefix,
	}
}

// decorate is a generic.StorageDecorator: the etcd3 store on the shared
// client, behind a watch cache.
func (f *Factory) decorate(
	config *storagebackend.ConfigForResource,
	resourcePrefix string,
	keyFunc func(obj runtime.Object) (string, error),
	newFunc func() runtime.Object,
	newListFunc func() runtime.Object,
	getAttrs apistorage.AttrFunc,
	triggers apistorage.IndexerFuncs,
	indexers *cache.Indexers,
) (apistorage.Interface, factory.DestroyFunc, error) {
	versioner := apistorage.APIObjectVersioner{}
	var compactor etcd3.Compactor
	if f.compactor != nil {
		compactor = f.compactor
	}
	store, err := etcd3.New(f.cfg.Client, compactor, config.Codec, newFunc, newListFunc, config.Prefix, resourcePrefix,
		config.GroupResource, f.transformer(config.GroupResource), config.LeaseManagerConfig,
		etcd3.NewDefaultDecoder(config.Codec, versioner), versioner)
	if err != nil {
		return nil, nil, fmt.Errorf("storage for %s: %w", config.GroupResource, err)
	}
	cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
		Storage:             store,
		Versioner:           versioner,
		GroupResource:       config.GroupResource,
		EventsHistoryWindow: config.EventsHistoryWindow,
		ResourcePrefix:      resourcePrefix,
		KeyFunc:             keyFunc,
		NewFunc:             newFunc,
		NewListFunc:         newListFunc,
		GetAttrsFunc:        getAttrs,
		IndexerFuncs:        triggers,
		Indexers:            indexers,
		Codec:               config.Codec,
	})
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("watch cache for %s: %w", config.GroupResource, err)
	}
	delegator := cacherstorage.NewCacheDelegator(cacher, store)
	destroyed := false
	return delegator, func() {
		if destroyed {
			return
		}
		destroyed = true
		delegator.Stop()
		cacher.Stop()
		store.Close()
	}, nil
}

// Raw is an etcd3 store without a watch cache for keys under
// prefix/resourcePrefix holding objects of newFunc's kind (the service
// allocators' RangeAllocations, the apiservers' endpoint leases): every
// read goes to etcd. close releases it.
func (f *Factory) Raw(gr schema.GroupResource, resourcePrefix string, newFunc, newListFunc func() runtime.Object) (_ apistorage.Interface, closeFn func(), _ error) {
	gvks, _, err := f.cfg.Scheme.ObjectKinds(newFunc())
	if err != nil {
		return nil, nil, fmt.Errorf("storage for %s: %w", gr, err)
	}
	codec := f.Codec(gvks[0].GroupVersion())
	versioner := apistorage.APIObjectVersioner{}
	store, err := etcd3.New(f.cfg.Client, nil, codec, newFunc, newListFunc, f.cfg.Prefix, resourcePrefix, gr,
		f.transformer(gr), etcd3.NewDefaultLeaseManagerConfig(), etcd3.NewDefaultDecoder(codec, versioner), versioner)
	if err != nil {
		return nil, nil, fmt.Errorf("storage for %s: %w", gr, err)
	}
	return store, store.Close, nil
}
