// Package server is the agent's read-only HTTP API, like the kubelet's
// read-only port: GET /pods returns the pods the agent runs, with their
// status, as a v1 PodList; GET /healthz answers "ok" while the agent is
// healthy; GET /metrics serves the agent's Prometheus metrics, as the
// kubelet's read-only port does.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

// Config configures a Server.
type Config struct {
	// Listener serves the API (the agent opens it on --read-only-port);
	// required.
	Listener net.Listener
	// Pods lists the pods with their latest status; required.
	Pods func() []v1.Pod
	// Healthy reports why the agent is unhealthy (nil: healthy); optional.
	Healthy func() error
	// Metrics is served on /metrics; nil: /metrics answers 404.
	Metrics prometheus.Gatherer
	Logger  *slog.Logger
}

// Server serves the read-only API.
type Server struct {
	cfg Config
	srv *http.Server
}

// New validates cfg and returns a server; Run serves.
func New(cfg Config) (*Server, error) {
	if cfg.Listener == nil || cfg.Pods == nil {
		return nil, fmt.Errorf("server: Config.Listener and Config.Pods are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", s.pods)
	mux.HandleFunc("GET /pods/", s.pods)
	mux.HandleFunc("GET /healthz", s.healthz)
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.cfg.Listener) }()
	select {
	case err := <-errc:
		return fmt.Errorf("read-only API: %w", err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := s.srv.Shutdown(shutdown)
		if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
			err = e
		}
		return err
	}
}

func (s *Server) pods(w http.ResponseWriter, _ *http.Request) {
	list := v1.PodList{Items: s.cfg.Pods()}
	list.Kind, list.APIVersion = "PodList", "v1"
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&list); err != nil {
		s.cfg.Logger.Debug("writing /pods failed", "err", err)
	}
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Healthy != nil {
		if err := s.cfg.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "ok")
}
