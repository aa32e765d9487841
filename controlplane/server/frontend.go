package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"berth/controlplane/aggregator"
	"berth/controlplane/apiserver"
	"berth/controlplane/flowcontrol"
	"berth/controlplane/openapi"
	"berth/controlplane/pki"
	"berth/controlplane/resources"
	"berth/internal/version"
)

// frontEnd is the serving side of the server: the apiserver's handler and
// the parts it is made of, the HTTPS server, and the components that run
// beside it.
type frontEnd struct {
	token string       // the loopback clients' bearer token
	rc    *rest.Config // the loopback client's configuration
	auth  *serverAuth
	adm   *admissionSetup
	fc    *flowControl
	agg   *aggregator.Aggregator
	crs   *customResources
	docs  openAPIDocs

	srv *http.Server
	// requests is the requests' context (watches above all): it ends when
	// the server stops.
	requests       context.Context
	cancelRequests context.CancelFunc
	comps          []component
}

// buildFrontEnd builds the handler over b for the listener ln, its HTTPS
// server and the components that run beside it.
func (s *Server) buildFrontEnd(ctx context.Context, b *backend, ln net.Listener, id string) (*frontEnd, error) {
	log := s.cfg.Logger
	addr := ln.Addr().(*net.TCPAddr)
	token, err := newLoopbackToken()
	if err != nil {
		return nil, err
	}
	saAuth, err := b.saTokens.authenticator(b.set)
	if err != nil {
		return nil, err
	}
	f := &frontEnd{token: token, rc: loopbackConfig(kubeconfigHost(addr), b.creds.CAPEM, token)}
	if f.auth, err = s.newAuth(loopbackConfig(kubeconfigHost(addr), b.creds.CAPEM, token), b.creds, b.set, b.saTokens.audiences, saAuth); err != nil {
		return nil, err
	}
	f.docs = s.openAPIDocs(b.set)
	// Served without OpenAPI documents, as an aggregated metrics-server.
	metricsAPI, err := metricsAPIComponent(b.set, b.nodeTransport, s.cfg.MetricResolution, log)
	if err != nil {
		return nil, err
	}
	if f.adm, err = s.newAdmission(f.rc, b.set.Namespaces, f.auth.authz); err != nil {
		return nil, err
	}
	if f.fc, err = newFlowControl(f.rc, s.cfg.MaxRequestsInFlight, log); err != nil {
		return nil, err
	}
	agg, aggComp, err := newAggregator(f.rc, b.creds, b.set, log)
	if err != nil {
		return nil, err
	}
	f.agg = agg
	if f.crs, err = newCustomResources(f.rc, b.factory, f.docs.models, log); err != nil {
		return nil, err
	}
	handler, err := s.apiHandler(ctx, b, f, addr)
	if err != nil {
		return nil, err
	}
	f.requests, f.cancelRequests = context.WithCancel(context.WithoutCancel(ctx))
	if f.srv, err = httpServer(handler, b.creds, f.requests); err != nil {
		f.cancelRequests()
		return nil, err
	}
	nsComp, err := newNamespaceController(f.rc, log)
	if err != nil {
		f.cancelRequests()
		return nil, err
	}
	f.comps = []component{nsComp}
	f.comps = append(f.comps, f.adm.comps...)
	f.comps = append(f.comps, f.fc.comp)
	more, err := s.components(b, f, addr.Port, id, metricsAPI, aggComp)
	if err != nil {
		f.cancelRequests()
		return nil, err
	}
	f.comps = append(f.comps, more...)
	return f, nil
}

// apiHandler is the apiserver's handler over b and f's parts.
func (s *Server) apiHandler(ctx context.Context, b *backend, f *frontEnd, addr *net.TCPAddr) (http.Handler, error) {
	cfg := s.cfg
	openapiHandler := f.docs.handler
	if openapiHandler != nil {
		openapiHandler = f.crs.serving.OpenAPI(openapiHandler, f.docs.staticV2)
	}
	advertised := advertisedAddress(cfg, addr)
	// The default jwks_uri is on the address published in the kubernetes
	// endpoints (kube-apiserver's external address), which pods reach.
	external := advertised
	if ip, err := publicIP(cfg); err == nil {
		external = net.JoinHostPort(ip.String(), fmt.Sprint(addr.Port))
	}
	return apiserver.New(apiserver.Config{
		Dynamic:        f.crs.serving,
		Admission:      f.adm.chain,
		Scheme:         b.scheme,
		Resources:      b.set.Resources,
		Authenticator:  loopbackAuthenticator{token: f.token, next: f.auth.authn},
		Authorizer:     f.auth.authz,
		OpenAPI:        openapiHandler,
		TypeConverter:  f.docs.converter,
		Ready:          func() error { return readiness(ctx, b.etcd.Client) },
		ServerAddress:  advertised,
		Metrics:        cfg.Metrics,
		MetricsHandler: promhttp.HandlerFor(prometheus.Gatherers{cfg.Gatherer, flowcontrol.Metrics()}, promhttp.HandlerOpts{}),
		Profiling:      cfg.Profiling,
		Logger:         cfg.Logger,

		PriorityAndFairness: f.fc.wrap,
		Aggregator:          f.agg,
		IssuerDiscovery:     b.saTokens.issuerDiscovery(cfg.ServiceAccountJWKSURI, external, cfg.Logger),
	})
}

// openAPIDocs are the OpenAPI documents' handler and what server-side apply
// and the custom resources take from them; nil where they could not be built.
type openAPIDocs struct {
	handler   http.Handler
	staticV2  *spec.Swagger
	models    map[string]*spec.Schema
	converter managedfields.TypeConverter
}

// openAPIDocs builds the documents of set; without them the server still
// serves (kubectl validation, explain and server-side apply do not work).
func (s *Server) openAPIDocs(set *resources.Set) openAPIDocs {
	var d openAPIDocs
	docs, err := openapi.New(openapiResources(set), openapi.Info{Version: version.Kubernetes(), ServerSideApply: true})
	if err != nil {
		s.cfg.Logger.Warn("OpenAPI documents unavailable; kubectl validation, explain and server-side apply will not work", "err", err)
		return d
	}
	d.handler, d.staticV2 = docs.Handler(), docs.Swagger()
	if d.models, err = staticModels(docs); err == nil {
		d.converter, err = managedfields.NewTypeConverter(d.models, false)
	}
	if err != nil {
		s.cfg.Logger.Warn("server-side apply unavailable", "err", err)
	}
	return d
}

// httpServer serves handler over TLS with the serving certificate, verifying
// client certificates of the cluster CA when given; the requests' contexts
// derive from requests.
func httpServer(handler http.Handler, creds *pki.Bundle, requests context.Context) (*http.Server, error) {
	cert, err := tls.X509KeyPair(creds.ServingCertPEM, creds.ServingKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("server: serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(creds.CA)
	return &http.Server{
		Handler:           handler,
		BaseContext:       func(net.Listener) context.Context { return requests },
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
	}, nil
}
