// Package etcd runs the control plane's embedded etcd member and dials etcd
// (embedded or external) for the storage layer.
package etcd

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"berth/internal/errdefs"
)

// EmbeddedConfig configures the embedded single-member etcd.
type EmbeddedConfig struct {
	// Dir is the member's data directory (created if missing).
	Dir string
	// CertFile and KeyFile are the member's TLS identity, CAFile the CA that
	// client and peer certificates must chain to. The member listens on
	// 127.0.0.1 only (ephemeral ports), clients must present a certificate.
	CertFile, KeyFile, CAFile string
	// StartTimeout bounds the wait for the member to become ready; default 60s.
	StartTimeout time.Duration
	// Logger receives a line when the member is up; etcd's own log goes to Dir/etcd.log.
	Logger *slog.Logger
}

// Embedded is a running embedded etcd member.
type Embedded struct {
	etcd     *embed.Etcd
	endpoint string
}

// StartEmbedded starts the member and waits until it serves.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Dir == "" || cfg.CertFile == "" || cfg.KeyFile == "" || cfg.CAFile == "" {
		return nil, fmt.Errorf("embedded etcd: Dir, CertFile, KeyFile and CAFile are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	ec := embed.NewConfig()
	ec.Name = "berth"
	ec.Dir = filepath.Join(cfg.Dir, "member-data")
	// Port 0: the kernel picks free loopback ports on every start. The peer
	// URL only names this single member, so its string must stay the same
	// across restarts (it is part of the member's identity).
	loop := url.URL{Scheme: "https", Host: "127.0.0.1:0"}
	ec.ListenClientUrls = []url.URL{loop}
	ec.AdvertiseClientUrls = []url.URL{loop}
	ec.ListenPeerUrls = []url.URL{loop}
	ec.AdvertisePeerUrls = []url.URL{loop}
	ec.InitialCluster = ec.Name + "=" + loop.String()
	ec.ClientTLSInfo.CertFile, ec.ClientTLSInfo.KeyFile, ec.ClientTLSInfo.TrustedCAFile = cfg.CertFile, cfg.KeyFile, cfg.CAFile
	ec.ClientTLSInfo.ClientCertAuth = true
	ec.PeerTLSInfo = ec.ClientTLSInfo
	ec.Logger = "zap"
	ec.LogLevel = "warn"
	ec.LogOutputs = []string{filepath.Join(cfg.Dir, "etcd.log")}
	// The apiserver's storage layer compacts (as kube-apiserver does).
	ec.AutoCompactionRetention = "0"

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd in %s: %w (see %s)", cfg.Dir, err, filepath.Join(cfg.Dir, "etcd.log"))
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w: %w", cfg.Dir, err, errdefs.ErrUnavailable)
	case <-time.After(cfg.StartTimeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: not ready after %s: %w", cfg.Dir, cfg.StartTimeout, errdefs.ErrDeadlineExceeded)
	}
	if len(e.Clients) == 0 {
		e.Close()
		return nil, fmt.Errorf("embedded etcd: no client listener: %w", errdefs.ErrUnavailable)
	}
	m := &Embedded{etcd: e, endpoint: "https://" + e.Clients[0].Addr().String()}
	cfg.Logger.Info("embedded etcd ready", "endpoint", m.endpoint, "dir", cfg.Dir)
	return m, nil
}

// Endpoint is the member's client URL (https://127.0.0.1:PORT).
func (m *Embedded) Endpoint() string { return m.endpoint }

// Err delivers a fatal error of the running member.
func (m *Embedded) Err() <-chan error { return m.etcd.Err() }

// Close stops the member, waiting for it to shut down.
func (m *Embedded) Close() {
	m.etcd.Close()
	<-m.etcd.Server.StopNotify()
}
