package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// HealthCheck is the health-check node port of a LoadBalancer Service with
// externalTrafficPolicy Local: load balancers send traffic to the nodes
// whose port answers 200, those with local endpoints.
type HealthCheck struct {
	Namespace, Name string
	// LocalEndpoints counts the distinct addresses of the service's ready
	// endpoints on this node.
	LocalEndpoints int
}

// healthChecks serves the health-check node ports, as kube-proxy's service
// health server: one listener per port on the node's addresses (all of
// them when none is configured).
type healthChecks struct {
	addrs   []netip.Addr
	healthy func() bool
	log     *slog.Logger

	mu      sync.Mutex
	servers map[int32]*healthCheckServer
}

type healthCheckServer struct {
	srv   *http.Server
	state HealthCheck
}

// sync opens the ports of want, closes those gone, and updates the counts.
func (h *healthChecks) sync(want map[int32]HealthCheck) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.servers == nil {
		h.servers = map[int32]*healthCheckServer{}
	}
	for port, s := range h.servers {
		if _, ok := want[port]; !ok {
			_ = s.srv.Close()
			delete(h.servers, port)
		}
	}
	for port, hc := range want {
		if s := h.servers[port]; s != nil {
			s.state = hc
			continue
		}
		s := &healthCheckServer{state: hc}
		s.srv = &http.Server{Handler: h.handler(port), ReadHeaderTimeout: 5 * time.Second}
		addrs := []string{":" + strconv.Itoa(int(port))}
		if len(h.addrs) > 0 {
			addrs = nil
			for _, a := range h.addrs {
				addrs = append(addrs, net.JoinHostPort(a.String(), strconv.Itoa(int(port))))
			}
		}
		var listeners []net.Listener
		for _, addr := range addrs {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				// As kube-proxy: logged, the rest of the proxy goes on.
				h.log.Error("opening a health-check node port failed", "service", hc.Namespace+"/"+hc.Name, "addr", addr, "err", err)
				continue
			}
			listeners = append(listeners, l)
		}
		for _, l := range listeners {
			go func() {
				if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
					h.log.Error("health-check node port stopped", "addr", l.Addr(), "err", err)
				}
			}()
		}
		h.servers[port] = s
	}
}

// handler answers kube-proxy's JSON with 200 when the service has local
// endpoints and the proxy is healthy, else 503.
func (h *healthChecks) handler(port int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		s := h.servers[port]
		var hc HealthCheck
		if s != nil {
			hc = s.state
		}
		h.mu.Unlock()
		healthy := h.healthy()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(hc.LocalEndpoints))
		if hc.LocalEndpoints > 0 && healthy {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		var body struct {
			Service struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"service"`
			LocalEndpoints      int  `json:"localEndpoints"`
			ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
		}
		body.Service.Namespace, body.Service.Name = hc.Namespace, hc.Name
		body.LocalEndpoints, body.ServiceProxyHealthy = hc.LocalEndpoints, healthy
		_ = json.NewEncoder(w).Encode(body)
	})
}

// close closes every port.
func (h *healthChecks) close(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for port, s := range h.servers {
		_ = s.srv.Shutdown(ctx)
		delete(h.servers, port)
	}
}
