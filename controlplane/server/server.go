// Package server is the composition root of `berth server`: credentials,
// etcd (embedded or external), storage, the served resources, the HTTPS
// apiserver, and beside it, under one supervisor, the namespace cleaner, the
// controller manager and the scheduler (each of the last two leader-elected
// through its Lease, on an in-process loopback client), run under one
// Run(ctx).
//
// Once it serves, Run writes the address local clients reach it at
// (host:port; 127.0.0.1 when it listens on every address) to
// DataDir/ListenAddressFile and points DataDir/admin.kubeconfig at it; it
// removes the file when it stops. Tests wait for that file.
package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"berth/controlplane/apiserver"
	"berth/controlplane/etcd"
	"berth/controlplane/flowcontrol"
	"berth/controlplane/leaderelect"
	"berth/controlplane/nscleaner"
	"berth/controlplane/openapi"
	"berth/controlplane/pki"
	"berth/controlplane/resources"
	"berth/controlplane/storage"
	"berth/internal/api/scheme"
	"berth/internal/supervisor"
	"berth/internal/version"
)

// ListenAddressFile is written into DataDir once the server is ready, with
// the host:port local clients reach it at (127.0.0.1 for a listener on every
// address).
const ListenAddressFile = "listen-address"

// BootstrapNamespaces exist from the first start.
var BootstrapNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Server is a configured, not yet running, control plane.
type Server struct {
	cfg Config
}

// New validates cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg}, nil
}

// Run starts everything, serves until ctx ends, then shuts down in order.
func (s *Server) Run(ctx context.Context) (err error) {
	cfg := s.cfg
	log := cfg.Logger
	// The server's identity, in the Leases and to the KMS plugins.
	id := leaderelect.NewIdentity()
	transformers, err := s.encryptionTransformers(ctx, id)
	if err != nil {
		return err
	}
	addrFile := filepath.Join(cfg.DataDir, ListenAddressFile)
	if err := os.Remove(addrFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("server: %w", err)
	}
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

	// etcd: embedded unless external servers are given.
	clientCfg := etcd.ClientConfig{Endpoints: cfg.EtcdServers, CAFile: cfg.EtcdCAFile, CertFile: cfg.EtcdCertFile, KeyFile: cfg.EtcdKeyFile}
	var member *etcd.Embedded
	if len(cfg.EtcdServers) == 0 {
		member, err = etcd.StartEmbedded(etcd.EmbeddedConfig{
			Dir:      filepath.Join(cfg.DataDir, "etcd"),
			CertFile: creds.Path(pki.EtcdCertFile), KeyFile: creds.Path(pki.EtcdKeyFile), CAFile: creds.Path(pki.EtcdCAFile),
			Logger: log,
		})
		if err != nil {
			return err
		}
		defer member.Close()
		clientCfg = etcd.ClientConfig{Endpoints: []string{member.Endpoint()},
			CAFile: creds.Path(pki.EtcdCAFile), CertFile: creds.Path(pki.EtcdClientCertFile), KeyFile: creds.Path(pki.EtcdClientKeyFile)}
	}
	client, err := etcd.NewClient(ctx, clientCfg)
	if err != nil {
		return err
	}
	defer client.Close()

	sch := scheme.New()
	factory, err := storage.New(storage.Config{Client: client, Scheme: sch, CompactionInterval: cfg.EtcdCompactionInterval, Transformers: transformers})
	if err != nil {
		return err
	}
	defer factory.Close()

	nodeTransport, err := nodeTransport(creds)
	if err != nil {
		return err
	}
	saTokens, err := newServiceAccountTokens(&cfg)
	if err != nil {
		return err
	}
	svcAlloc, err := newServiceAllocation(cfg, factory)
	if err != nil {
		return err
	}
	defer svcAlloc.close()
	set, err := resources.Build(resources.Config{Scheme: sch, Storage: factory, NodeTransport: nodeTransport, ProxyTransport: proxyTransport(),
		ServiceAccountTokens: saTokens.tokenRequest(), ServiceAllocators: svcAlloc.allocators})
	if err != nil {
		return err
	}
	defer set.Destroy()
	// As kube-apiserver, the allocations are repaired before serving.
	repairers, err := svcAlloc.bind(cfg, set)
	if err != nil {
		return err
	}
	dsc := &defaultServiceCIDR{set: set, cidrs: []string{svcAlloc.ipRange.String()}, log: log.With("component", "default-service-cidr")}
	if err := repairAtStart(ctx, set, dsc, repairers); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", cfg.Listen, err)
	}
	bound := ln.Addr().String()
	advertised := advertisedAddress(cfg, ln.Addr().(*net.TCPAddr))

	loopbackToken, err := newLoopbackToken()
	if err != nil {
		ln.Close()
		return err
	}
	saAuth, err := saTokens.authenticator(set)
	if err != nil {
		ln.Close()
		return err
	}
	auth, err := s.newAuth(loopbackConfig(kubeconfigHost(ln.Addr().(*net.TCPAddr)), creds.CAPEM, loopbackToken), creds, set, saTokens.audiences, saAuth)
	if err != nil {
		ln.Close()
		return err
	}
	var openapiHandler http.Handler
	var converter managedfields.TypeConverter
	var models map[string]*spec.Schema
	var staticV2 *spec.Swagger
	if docs, err := openapi.New(openapiResources(set), openapi.Info{Version: version.Kubernetes(), ServerSideApply: true}); err != nil {
		log.Warn("OpenAPI documents unavailable; kubectl validation, explain and server-side apply will not work", "err", err)
	} else {
		openapiHandler, staticV2 = docs.Handler(), docs.Swagger()
		if models, err = staticModels(docs); err == nil {
			converter, err = managedfields.NewTypeConverter(models, false)
		}
		if err != nil {
			log.Warn("server-side apply unavailable", "err", err)
		}
	}
	// Served without OpenAPI documents, as an aggregated metrics-server.
	metricsAPI, err := metricsAPIComponent(set, nodeTransport, cfg.MetricResolution, log)
	if err != nil {
		ln.Close()
		return err
	}
	rc := loopbackConfig(kubeconfigHost(ln.Addr().(*net.TCPAddr)), creds.CAPEM, loopbackToken)
	adm, err := s.newAdmission(rc, set.Namespaces, auth.authz)
	if err != nil {
		ln.Close()
		return err
	}
	fc, err := newFlowControl(rc, cfg.MaxRequestsInFlight, log)
	if err != nil {
		ln.Close()
		return err
	}
	// The default jwks_uri is on the address published in the kubernetes
	// endpoints (kube-apiserver's external address), which pods reach.
	external := advertised
	if ip, err := publicIP(cfg); err == nil {
		external = net.JoinHostPort(ip.String(), fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
	}
	issuerDiscovery := saTokens.issuerDiscovery(cfg.ServiceAccountJWKSURI, external, log)
	agg, aggComp, err := newAggregator(rc, creds, set, log)
	if err != nil {
		ln.Close()
		return err
	}
	// NamespaceLifecycle refuses creates in missing and terminating
	// namespaces; the apiserver's own check does it only when the plugin is off.
	var nsCheck apiserver.NamespaceChecker
	if !adm.lifecycle {
		nsCheck = resources.NamespaceLifecycle{Store: set.Namespaces}
	}
	crs, err := newCustomResources(rc, factory, models, log)
	if err != nil {
		ln.Close()
		return err
	}
	if openapiHandler != nil {
		openapiHandler = crs.serving.OpenAPI(openapiHandler, staticV2)
	}
	handler, err := apiserver.New(apiserver.Config{
		Dynamic:        crs.serving,
		Admission:      adm.chain,
		Scheme:         sch,
		Resources:      set.Resources,
		Authenticator:  loopbackAuthenticator{token: loopbackToken, next: auth.authn},
		Authorizer:     auth.authz,
		Namespaces:     nsCheck,
		OpenAPI:        openapiHandler,
		TypeConverter:  converter,
		Ready:          func() error { return readiness(ctx, client.Client) },
		ServerAddress:  advertised,
		Metrics:        cfg.Metrics,
		MetricsHandler: promhttp.HandlerFor(prometheus.Gatherers{cfg.Gatherer, flowcontrol.Metrics()}, promhttp.HandlerOpts{}),
		Profiling:      cfg.Profiling,
		Logger:         log,

		PriorityAndFairness: fc.wrap,
		Aggregator:          agg,
		IssuerDiscovery:     issuerDiscovery,
	})
	if err != nil {
		ln.Close()
		return err
	}

	cert, err := tls.X509KeyPair(creds.ServingCertPEM, creds.ServingKeyPEM)
	if err != nil {
		ln.Close()
		return fmt.Errorf("server: serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(creds.CA)
	// Requests (watches above all) end when the server stops.
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	srv := &http.Server{
		Handler:           handler,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.VerifyClientCertIfGiven,
			ClientCAs:    pool,
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"h2", "http/1.1"},
		},
		// As kube-apiserver's --http2-max-streams-per-connection: one
		// client may hold many watches on one connection.
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 1000},
	}

	if err := bootstrapNamespaces(ctx, set); err != nil {
		ln.Close()
		return err
	}
	if err := bootstrapPriorityClasses(ctx, set); err != nil {
		ln.Close()
		return err
	}
	comps := []component{{name: "namespace-cleaner", run: func(ctx context.Context) error {
		return nscleaner.Run(ctx, nscleaner.Config{Resources: set, Logger: log})
	}}}
	leaders := newLeaderMetrics()
	comps = append(comps, adm.comps...)
	comps = append(comps, fc.comp)
	csrComp, err := certificatesComponent(rc, creds, log)
	if err != nil {
		ln.Close()
		return err
	}
	repairComp, err := repairComponent(cfg.ServiceRepairInterval, rc, repairers)
	if err != nil {
		ln.Close()
		return err
	}
	comps = append(comps, csrComp, auth.component(), repairComp, metricsAPI)
	comps = append(comps, component{name: "default-service-cidr", run: dsc.run})
	k8sSvc, err := kubernetesServiceComponent(cfg, factory, svcAlloc, rc, ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		ln.Close()
		return err
	}
	comps = append(comps, k8sSvc, crs.component(), aggComp)
	more, err := s.controlPlaneComponents(rc, id, leaders)
	if err != nil {
		ln.Close()
		return err
	}
	comps = append(comps, more...)
	if err := registerReplacing(cfg.Metrics, leaders); err != nil {
		ln.Close()
		return fmt.Errorf("server: metrics: %w", err)
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ServeTLS(ln, "", "") }()
	defer func() {
		cancelRequests()
		auth.informers.Shutdown()
	}()
	// The components stop before the apiserver does: releasing their
	// Leases goes through it.
	sup := supervisor.New(ctx, supervisor.Config{StopTimeout: componentStopTimeout, Logger: log})
	for _, c := range comps {
		sup.Go(c.name, c.run)
	}
	// Clients learn the address only once the default policy, the agent
	// token's secret and the authorizers' caches are in place (writing the
	// policy needs admission's caches, filled by the components).
	local := kubeconfigHost(ln.Addr().(*net.TCPAddr))
	if err := auth.start(ctx, reqCtx.Done()); err != nil {
		sup.Stop()
		srv.Close()
		return err
	}
	if err := crs.waitSynced(ctx); err != nil {
		sup.Stop()
		srv.Close()
		return err
	}
	if err := creds.WriteKubeconfig("https://" + local); err != nil {
		sup.Stop()
		srv.Close()
		return err
	}
	if err := os.WriteFile(addrFile, []byte(local+"\n"), 0o644); err != nil {
		sup.Stop()
		srv.Close()
		return fmt.Errorf("server: %w", err)
	}
	defer os.Remove(addrFile)
	log.Info("berth server serving", "address", bound, "kubeconfig", creds.Path(pki.KubeconfigFile), "etcd", clientCfg.Endpoints, "identity", id)

	var memberErr <-chan error
	if member != nil {
		memberErr = member.Err()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("server: serving: %w", err)
	case err := <-memberErr:
		runErr = fmt.Errorf("server: embedded etcd failed: %w", err)
	case <-sup.Failed():
		runErr = fmt.Errorf("server: %w", sup.Err())
	}
	sup.Stop()
	cancelRequests()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	return runErr
}

// bootstrapNamespaces creates the namespaces that always exist.
func bootstrapNamespaces(ctx context.Context, set *resources.Set) error {
	for _, name := range BootstrapNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := set.Namespaces.Create(genericapirequest.WithNamespace(ctx, ""), ns, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("server: creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// readiness checks etcd answers a linearizable read (it has a quorum).
func readiness(ctx context.Context, c *clientv3.Client) error {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.Get(rctx, "/registry/health", clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	return nil
}

// nodeTransport reaches node agents: their serving certificates must chain
// to the cluster CA; the apiserver presents its node-client certificate.
func nodeTransport(creds *pki.Bundle) (http.RoundTripper, error) {
	cert, err := tls.X509KeyPair(creds.NodeClientCertPEM, creds.NodeClientKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("server: node client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(creds.CA)
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		// HTTP/1.1 only: exec, attach and port-forward upgrade the connection.
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
	}, nil
}

// proxyTransport reaches pods (pods/proxy, services/proxy) and nodes on
// ports other than the agent's, as kube-apiserver's proxy transport: the
// backends are addressed by IP, so TLS cannot verify them; no client
// certificate is presented.
func proxyTransport() http.RoundTripper {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 25,
		// HTTP/1.1 only: upgraded connections (WebSocket) pass through.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
}

// openapiResources describes the served resources for the OpenAPI documents.
func openapiResources(set *resources.Set) []openapi.Resource {
	known := map[string]bool{
		openapi.SubresourceStatus: true, openapi.SubresourceScale: true, openapi.SubresourceBinding: true,
		openapi.SubresourceEviction: true, openapi.SubresourceLog: true, openapi.SubresourceExec: true,
		openapi.SubresourceAttach: true, openapi.SubresourcePortForward: true, openapi.SubresourceApproval: true,
		openapi.SubresourceEphemeral: true,
	}
	var out []openapi.Resource
	for _, r := range set.Resources {
		var subs []string
		for name := range r.Subresources {
			if known[name] {
				subs = append(subs, name)
			}
		}
		sort.Strings(subs)
		if r.Verbs != nil {
			// Not stored (selfsubjectreviews): only its verbs, no list type.
			out = append(out, openapi.Resource{GVK: r.GroupVersionKind(), Resource: r.Resource, Namespaced: r.Namespaced,
				Verbs: r.Verbs, Object: r.Store.New()})
			continue
		}
		out = append(out, openapi.Resource{
			GVK: r.GroupVersionKind(), Resource: r.Resource, Namespaced: r.Namespaced,
			Verbs: []string{openapi.VerbCreate, openapi.VerbDelete, openapi.VerbDeleteCollection, openapi.VerbGet,
				openapi.VerbList, openapi.VerbPatch, openapi.VerbUpdate, openapi.VerbWatch},
			Subresources: subs, Object: r.Store.New(), List: r.Store.NewList(),
		})
	}
	return out
}

// kubeconfigHost is how a local client reaches the listener.
func kubeconfigHost(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(a.Port))
	}
	return a.String()
}

// advertisedAddress is what /api publishes.
func advertisedAddress(cfg Config, a *net.TCPAddr) string {
	if cfg.AdvertiseAddress != "" {
		return net.JoinHostPort(strings.Trim(cfg.AdvertiseAddress, "[]"), fmt.Sprint(a.Port))
	}
	return kubeconfigHost(a)
}
