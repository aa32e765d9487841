// Package server is the composition root of `berth server`: credentials,
// etcd (embedded or external), storage, the served resources, the HTTPS
// apiserver, and beside it, under one supervisor, the namespace controller, the
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

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/leaderelect"
	"berth/controlplane/openapi"
	"berth/controlplane/pki"
	"berth/controlplane/resources"
	"berth/internal/supervisor"
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
func (s *Server) Run(ctx context.Context) error {
	// The server's identity, in the Leases and to the KMS plugins.
	id := leaderelect.NewIdentity()
	transformers, err := s.encryptionTransformers(ctx, id)
	if err != nil {
		return err
	}
	addrFile := filepath.Join(s.cfg.DataDir, ListenAddressFile)
	if err := os.Remove(addrFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("server: %w", err)
	}
	b, err := s.openBackend(ctx, transformers)
	if err != nil {
		return err
	}
	defer b.close()
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.cfg.Listen, err)
	}
	f, err := s.buildFrontEnd(ctx, b, ln, id)
	if err != nil {
		ln.Close()
		return err
	}
	defer f.cancelRequests()
	return s.serve(ctx, b, f, ln, addrFile, id)
}

// serve serves f on ln with its components beside it, publishes the address
// once the server is ready, and waits for ctx's end or a failure; then it
// stops the components before the apiserver (releasing their Leases goes
// through it).
func (s *Server) serve(ctx context.Context, b *backend, f *frontEnd, ln net.Listener, addrFile, id string) error {
	log := s.cfg.Logger
	serveErr := make(chan error, 1)
	go func() { serveErr <- f.srv.ServeTLS(ln, "", "") }()
	defer func() {
		f.cancelRequests()
		f.auth.informers.Shutdown()
	}()
	sup := supervisor.New(ctx, supervisor.Config{StopTimeout: componentStopTimeout, Logger: log})
	for _, c := range f.comps {
		sup.Go(c.name, c.run)
	}
	local := kubeconfigHost(ln.Addr().(*net.TCPAddr))
	if err := s.publish(ctx, b, f, local, addrFile); err != nil {
		sup.Stop()
		f.srv.Close()
		return err
	}
	defer os.Remove(addrFile)
	log.Info("berth server serving", "address", ln.Addr().String(), "kubeconfig", b.creds.Path(pki.KubeconfigFile), "etcd", b.endpoints, "identity", id)

	var memberErr <-chan error
	if b.member != nil {
		memberErr = b.member.Err()
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
	f.cancelRequests()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(shutdownCtx); err != nil {
		f.srv.Close()
	}
	return runErr
}

// publish tells local clients the address (the admin kubeconfig and
// ListenAddressFile) once the server is ready for them: the default policy,
// the agent token's secret and the authorizers' caches in place (writing the
// policy needs admission's caches, filled by the components), the custom
// resources served.
func (s *Server) publish(ctx context.Context, b *backend, f *frontEnd, local, addrFile string) error {
	if err := f.auth.start(ctx, f.requests.Done()); err != nil {
		return err
	}
	if err := f.crs.waitSynced(ctx); err != nil {
		return err
	}
	if err := b.creds.WriteKubeconfig("https://" + local); err != nil {
		return err
	}
	if err := os.WriteFile(addrFile, []byte(local+"\n"), 0o644); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
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
