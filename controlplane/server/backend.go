package server

import (
	"context"
	"net"
	"net/http"
	"path/filepath"

	etcdkube "go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/value"

	"berth/controlplane/etcd"
	"berth/controlplane/pki"
	"berth/controlplane/resources"
	"berth/controlplane/storage"
	"berth/internal/api/scheme"
)

// backend is what the apiserver serves from: the credentials, etcd
// (embedded or external), the storage, the served resources and the
// service allocations, repaired and bootstrapped.
type backend struct {
	creds         *pki.Bundle
	member        *etcd.Embedded // nil with external etcd
	etcd          *etcdkube.Client
	endpoints     []string // etcd's
	scheme        *runtime.Scheme
	factory       *storage.Factory
	nodeTransport http.RoundTripper
	saTokens      *serviceAccountTokens
	svcAlloc      *serviceAllocation
	set           *resources.Set
	repairers     repairers
	dsc           *defaultServiceCIDR
	closers       []func() // in opening order
}

// close releases what openBackend opened, in reverse order.
func (b *backend) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// openBackend opens the storage and builds the resources on it (the
// allocations repaired and the bootstrap objects created before serving, as
// kube-apiserver); on an error what it opened is closed.
func (s *Server) openBackend(ctx context.Context, transformers value.ResourceTransformers) (_ *backend, err error) {
	b := &backend{}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	if err := s.openStorage(ctx, b, transformers); err != nil {
		return nil, err
	}
	if err := s.buildResources(b); err != nil {
		return nil, err
	}
	b.dsc = &defaultServiceCIDR{set: b.set, cidrs: []string{b.svcAlloc.ipRange.String()}, log: s.cfg.Logger.With("component", "default-service-cidr")}
	if err := repairAtStart(ctx, b.set, b.dsc, b.repairers); err != nil {
		return nil, err
	}
	if err := bootstrapNamespaces(ctx, b.set); err != nil {
		return nil, err
	}
	if err := bootstrapPriorityClasses(ctx, b.set); err != nil {
		return nil, err
	}
	return b, nil
}

// openStorage ensures the credentials, starts the embedded etcd unless
// external servers are given, and opens the storage factory.
func (s *Server) openStorage(ctx context.Context, b *backend, transformers value.ResourceTransformers) error {
	cfg := s.cfg
	var hosts []string
	if cfg.AdvertiseAddress != "" {
		hosts = append(hosts, cfg.AdvertiseAddress)
	}
	if h, _, _ := net.SplitHostPort(cfg.Listen); h != "" && h != "0.0.0.0" && h != "::" {
		hosts = append(hosts, h)
	}
	hosts = append(hosts, serviceCertHosts(cfg)...)
	creds, err := pki.Ensure(pki.Options{Dir: cfg.DataDir, Hosts: hosts})
	if err != nil {
		return err
	}
	b.creds = creds
	clientCfg := etcd.ClientConfig{Endpoints: cfg.EtcdServers, CAFile: cfg.EtcdCAFile, CertFile: cfg.EtcdCertFile, KeyFile: cfg.EtcdKeyFile}
	if len(cfg.EtcdServers) == 0 {
		member, err := etcd.StartEmbedded(etcd.EmbeddedConfig{
			Dir:      filepath.Join(cfg.DataDir, "etcd"),
			CertFile: creds.Path(pki.EtcdCertFile), KeyFile: creds.Path(pki.EtcdKeyFile), CAFile: creds.Path(pki.EtcdCAFile),
			Logger: cfg.Logger,
		})
		if err != nil {
			return err
		}
		b.member, b.closers = member, append(b.closers, func() { member.Close() })
		clientCfg = etcd.ClientConfig{Endpoints: []string{member.Endpoint()},
			CAFile: creds.Path(pki.EtcdCAFile), CertFile: creds.Path(pki.EtcdClientCertFile), KeyFile: creds.Path(pki.EtcdClientKeyFile)}
	}
	b.endpoints = clientCfg.Endpoints
	if b.etcd, err = etcd.NewClient(ctx, clientCfg); err != nil {
		return err
	}
	b.closers = append(b.closers, func() { b.etcd.Close() })
	b.scheme = scheme.New()
	if b.factory, err = storage.New(storage.Config{Client: b.etcd, Scheme: b.scheme, CompactionInterval: cfg.EtcdCompactionInterval, Transformers: transformers}); err != nil {
		return err
	}
	b.closers = append(b.closers, b.factory.Close)
	return nil
}

// buildResources builds the served resources on the storage, with the
// service allocations and the service account tokens they use.
func (s *Server) buildResources(b *backend) error {
	var err error
	if b.nodeTransport, err = nodeTransport(b.creds); err != nil {
		return err
	}
	if b.saTokens, err = newServiceAccountTokens(&s.cfg); err != nil {
		return err
	}
	if b.svcAlloc, err = newServiceAllocation(s.cfg, b.factory); err != nil {
		return err
	}
	b.closers = append(b.closers, b.svcAlloc.close)
	b.set, err = resources.Build(resources.Config{Scheme: b.scheme, Storage: b.factory, NodeTransport: b.nodeTransport, ProxyTransport: proxyTransport(),
		ServiceAccountTokens: b.saTokens.tokenRequest(), ServiceAllocators: b.svcAlloc.allocators})
	if err != nil {
		return err
	}
	b.closers = append(b.closers, b.set.Destroy)
	b.repairers, err = b.svcAlloc.bind(s.cfg, b.set)
	return err
}
