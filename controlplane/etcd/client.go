package etcd

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"

	"berth/internal/errdefs"
)

// ClientConfig says how to reach etcd.
type ClientConfig struct {
	// Endpoints are client URLs (http:// or https://).
	Endpoints []string
	// CAFile verifies the servers; CertFile/KeyFile are the client identity.
	// All empty with https endpoints: the system roots and no client certificate.
	CAFile, CertFile, KeyFile string
	// DialTimeout bounds the first connection; default 20s.
	DialTimeout time.Duration
}

// NewClient dials etcd and checks it answers (a Status call on some endpoint).
func NewClient(ctx context.Context, cfg ClientConfig) (*kubernetes.Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("etcd client: no endpoints: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 20 * time.Second
	}
	cc := clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          cfg.DialTimeout,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		Logger:               zap.NewNop(),
	}
	if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
		info := transport.TLSInfo{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, TrustedCAFile: cfg.CAFile}
		tlsCfg, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd client TLS: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		cc.TLS = tlsCfg
	}
	c, err := kubernetes.New(cc)
	if err != nil {
		return nil, fmt.Errorf("etcd client %v: %v: %w", cfg.Endpoints, err, errdefs.ErrUnavailable)
	}
	// Any endpoint answering is enough: a cluster with a member down still serves.
	var lastErr error
	deadline := time.Now().Add(cfg.DialTimeout)
	for time.Now().Before(deadline) {
		for _, ep := range cfg.Endpoints {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, lastErr = c.Status(sctx, ep)
			cancel()
			if lastErr == nil {
				return c, nil
			}
		}
		select {
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	c.Close()
	return nil, fmt.Errorf("etcd %v not answering: %v: %w", cfg.Endpoints, lastErr, errdefs.ErrUnavailable)
}
