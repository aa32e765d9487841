package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"berth/internal/errdefs"
)

// Defaults for Config.
const (
	DefaultListen             = "0.0.0.0:6443"
	DefaultCompactionInterval = 5 * time.Minute
)

// Config configures `berth server`.
type Config struct {
	// DataDir holds the credentials (see controlplane/pki), the embedded
	// etcd's data under DataDir/etcd, and the ListenAddressFile.
	DataDir string
	// Listen is the HTTPS address, host:port; port 0 picks a free port
	// (written to DataDir/ListenAddressFile once serving).
	Listen string
	// AdvertiseAddress is an extra address (IP or DNS name) clients reach the
	// server at: added to the serving certificate and published in /api.
	AdvertiseAddress string
	// EtcdServers, when set, are an external etcd cluster's client URLs,
	// used instead of the embedded member; EtcdCAFile, EtcdCertFile and
	// EtcdKeyFile are the TLS settings towards it.
	EtcdServers                           []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdCompactionInterval is how often old etcd revisions are compacted
	// (kube-apiserver's --etcd-compaction-interval); 0 disables it. Watches
	// from a compacted revision get 410 Gone.
	EtcdCompactionInterval time.Duration
	// Logger receives the server's log; nil discards.
	Logger *slog.Logger
	// Metrics registers the server's Prometheus metrics; Gatherer serves
	// them at /metrics. Both nil: a private registry.
	Metrics  prometheus.Registerer
	Gatherer prometheus.Gatherer
}

// Validate fills defaults and checks every field, naming the bad one.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("server config: data dir is required: %w", errdefs.ErrInvalidArgument)
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
		return fmt.Errorf("server config: listen address %q: want host:port: %w", c.Listen, errdefs.ErrInvalidArgument)
	}
	for _, s := range c.EtcdServers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("server config: etcd server %q: want an http:// or https:// URL: %w", s, errdefs.ErrInvalidArgument)
		}
	}
	if len(c.EtcdServers) == 0 && (c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != "") {
		return fmt.Errorf("server config: etcd TLS files given without etcd servers: %w", errdefs.ErrInvalidArgument)
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		return fmt.Errorf("server config: etcd cert file and key file go together: %w", errdefs.ErrInvalidArgument)
	}
	if c.EtcdCompactionInterval < 0 {
		return fmt.Errorf("server config: etcd compaction interval %s is negative: %w", c.EtcdCompactionInterval, errdefs.ErrInvalidArgument)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil && c.Gatherer == nil {
		reg := prometheus.NewRegistry()
		c.Metrics, c.Gatherer = reg, reg
	}
	return nil
}
