package kubeletapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"berth/internal/errdefs"
)

// Server is the agent's API.
type Server struct {
	cfg   Config
	authn authenticator.Request
	tls   *tls.Config
	mux   *http.ServeMux
}

// New validates cfg, loads (or generates) the serving certificate and the
// client CA bundle, and returns a Server; Run serves.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var certs []tls.Certificate
	if cfg.GetCertificate == nil {
		cert, err := servingCertificate(cfg)
		if err != nil {
			return nil, err
		}
		certs = []tls.Certificate{cert}
	}
	caPEM, err := os.ReadFile(cfg.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: Config.ClientCAFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("kubeletapi: Config.ClientCAFile %s: no PEM certificates in it: %w", cfg.ClientCAFile, errdefs.ErrInvalidArgument)
	}
	authn, err := newAuthenticator(cfg, caPEM)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:   cfg,
		authn: authn,
		tls: &tls.Config{
			Certificates:   certs,
			GetCertificate: cfg.GetCertificate,
			// Verified when given; a request without one is answered 401.
			ClientAuth: tls.VerifyClientCertIfGiven,
			ClientCAs:  pool,
			MinVersion: tls.VersionTLS12,
			// HTTP/1.1 only: connection upgrades (SPDY, WebSocket) need it.
			NextProtos: []string{"http/1.1"},
		},
		mux: http.NewServeMux(),
	}
	s.routes()
	return s, nil
}

// routes registers the kubelet's paths.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /pods", s.pods)
	s.mux.HandleFunc("GET /pods/", s.pods)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("GET /metrics/probes", s.probeMetrics)
	// As the kubelet: the node's log files, and directory listings.
	s.mux.Handle("GET /logs/", http.StripPrefix("/logs/", http.FileServer(http.Dir(s.cfg.NodeLogDir))))
	s.mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		s.mux.HandleFunc(method+" /exec/{ns}/{pod}/{container}", s.exec)
		s.mux.HandleFunc(method+" /exec/{ns}/{pod}/{uid}/{container}", s.exec)
		s.mux.HandleFunc(method+" /attach/{ns}/{pod}/{container}", s.attach)
		s.mux.HandleFunc(method+" /attach/{ns}/{pod}/{uid}/{container}", s.attach)
		s.mux.HandleFunc(method+" /portForward/{ns}/{pod}", s.portForward)
		s.mux.HandleFunc(method+" /portForward/{ns}/{pod}/{uid}", s.portForward)
	}
	s.statsRoutes()
}

// Handler is the API behind authentication and authorization, for serving
// on a TLS listener of the caller's (Run serves it itself).
func (s *Server) Handler() http.Handler { return s.authenticate(s.mux) }

// Run serves until ctx ends, then shuts down (closing hijacked streams with
// their connections' contexts).
func (s *Server) Run(ctx context.Context) error {
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Address); err != nil {
			return fmt.Errorf("kubeletapi: listen on %s: %w", s.cfg.Address, err)
		}
	}
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	// Shutdown does not close hijacked (streaming) connections; Run closes
	// what is left open.
	conns := &trackingListener{Listener: ln, open: map[*trackedConn]struct{}{}}
	srv := &http.Server{
		Handler:           s.Handler(),
		TLSConfig:         s.tls,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		// TLS handshake failures and the like, at debug level.
		ErrorLog: slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	s.cfg.Logger.Info("serving the agent API", "address", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(tls.NewListener(conns, s.tls)) }()
	select {
	case err := <-errc:
		return fmt.Errorf("kubeletapi: serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cancelBase() // ends followed logs and proxied streams
	err := srv.Shutdown(shutdown)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	conns.closeAll()
	return err
}

// trackingListener remembers its open connections.
type trackingListener struct {
	net.Listener
	mu   sync.Mutex
	open map[*trackedConn]struct{}
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	l.open[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

// closeAll closes the connections still open.
func (l *trackingListener) closeAll() {
	l.mu.Lock()
	open := make([]*trackedConn, 0, len(l.open))
	for c := range l.open {
		open = append(open, c)
	}
	l.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// trackedConn leaves its listener's set when closed.
type trackedConn struct {
	net.Conn
	l    *trackingListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.open, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Healthy != nil {
		if err := s.cfg.Healthy(); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

func (s *Server) pods(w http.ResponseWriter, _ *http.Request) {
	list := v1.PodList{Items: s.cfg.Pods()}
	list.Kind, list.APIVersion = "PodList", "v1"
	if list.Items == nil {
		list.Items = []v1.Pod{}
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&list); err != nil {
		s.cfg.Logger.Debug("writing /pods failed", "err", err)
	}
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		http.NotFound(w, r)
		return
	}
	promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// findPod returns the pod namespace/name from Config.Pods.
func (s *Server) findPod(namespace, name string) (*v1.Pod, bool) {
	pods := s.cfg.Pods()
	for i := range pods {
		if pods[i].Namespace == namespace && pods[i].Name == name {
			return &pods[i], true
		}
	}
	return nil, false
}

// writeError answers with err's message and the status its class maps to
// (defaultCode for unclassified errors).
func writeError(w http.ResponseWriter, err error, defaultCode int) {
	code := defaultCode
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, errdefs.ErrInvalidArgument):
		code = http.StatusBadRequest
	case errors.Is(err, errdefs.ErrUnavailable):
		code = http.StatusServiceUnavailable
	case errors.Is(err, errdefs.ErrDeadlineExceeded):
		code = http.StatusGatewayTimeout
	}
	http.Error(w, err.Error(), code)
}
