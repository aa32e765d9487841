package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// Retry delays after a failed renewal: doubling from the first to the
// last, the old certificate staying in use meanwhile.
const (
	renewRetryInitial = 2 * time.Second
	renewRetryMax     = 5 * time.Minute
)

// RotatorConfig configures a Rotator.
type RotatorConfig struct {
	// Request is what to renew (client or serving certificate, node name,
	// IPs, Dir, Expiration). Its Client makes the renewal requests: for the
	// node identity to be the requester (which approval requires of a
	// renewal), it authenticates with the node's client certificate — for
	// the client certificate itself, through this Rotator
	// (RotatingClientConfig).
	Request Request
	// Clock times the renewals; default the real clock.
	Clock clock.Clock
	// Jitter returns a number in [0, 1) placing each renewal in its window;
	// default math/rand.
	Jitter func() float64
	// OnRotate is called after a renewed certificate is in use (a client
	// closes its connections so that new ones present it); optional.
	OnRotate func()
	// Logger; default discards.
	Logger *slog.Logger
}

// Rotator keeps a node certificate fresh, as the kubelet's certificate
// manager: at a jittered point between 70 % and 84 % of the current
// certificate's lifetime (RotationDeadline) it requests a new one through
// the CSR API with a new key, keeps serving the old one until the new one
// is issued (retrying failures with a doubling delay), writes the new pair
// to the request's files and switches to it. TLS configurations take the
// certificate from GetClientCertificate or GetCertificate on each
// handshake, so the switch needs no restart.
type Rotator struct {
	cfg RotatorConfig

	mu      sync.Mutex
	current *tls.Certificate
	changed chan struct{} // closed and replaced on every rotation
}

// NewRotator validates cfg and loads the current pair from the request's
// files (Obtain puts it there).
func NewRotator(cfg RotatorConfig) (*Rotator, error) {
	if err := cfg.Request.validate(); err != nil {
		return nil, err
	}
	return newRotator(cfg)
}

// newRotator is NewRotator without the check of Request.Client (which
// NewClientRotator sets afterwards).
func newRotator(cfg RotatorConfig) (*Rotator, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	certFile, keyFile := cfg.Request.Files()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: the current certificate %s: %w", certFile, errdefs.ErrNotFound)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("bootstrap: %s: %w", certFile, err)
		}
	}
	return &Rotator{cfg: cfg, current: &pair, changed: make(chan struct{})}, nil
}

// RotationDeadline is when a certificate valid from notBefore to notAfter
// is renewed: after 70 % of its lifetime plus up to a fifth of that again
// (jitter in [0, 1)), as the kubelet's certificate manager.
func RotationDeadline(notBefore, notAfter time.Time, jitter float64) time.Time {
	total := notAfter.Sub(notBefore)
	base := time.Duration(float64(total) * 0.7)
	return notBefore.Add(base + time.Duration(jitter*0.2*float64(base)))
}

// Current is the certificate in use.
func (r *Rotator) Current() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// Changed is closed at the next rotation.
func (r *Rotator) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// GetClientCertificate is tls.Config.GetClientCertificate: the current
// certificate.
func (r *Rotator) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return r.Current(), nil
}

// GetCertificate is tls.Config.GetCertificate: the current certificate.
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.Current(), nil
}

// Run renews the certificate whenever its deadline comes, until ctx ends.
func (r *Rotator) Run(ctx context.Context) error {
	log := r.cfg.Logger.With("certificate", r.kind())
	retry := time.Duration(0)
	for {
		leaf := r.Current().Leaf
		deadline := RotationDeadline(leaf.NotBefore, leaf.NotAfter, r.cfg.Jitter())
		wait := deadline.Sub(r.cfg.Clock.Now())
		if retry > 0 {
			wait = retry
		}
		if wait > 0 {
			log.Debug("next certificate renewal", "at", r.cfg.Clock.Now().Add(wait), "expires", leaf.NotAfter)
			t := r.cfg.Clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
			}
		}
		pair, err := requestAndWrite(ctx, r.cfg.Request)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			retry = min(max(2*retry, renewRetryInitial), renewRetryMax)
			log.Warn("renewing the node certificate failed; the current one stays in use", "err", err,
				"expires", leaf.NotAfter, "retryIn", retry)
			continue
		}
		retry = 0
		r.mu.Lock()
		r.current = pair
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
		log.Info("renewed the node certificate", "serial", pair.Leaf.SerialNumber.Text(16), "expires", pair.Leaf.NotAfter)
		if r.cfg.OnRotate != nil {
			r.cfg.OnRotate()
		}
	}
}

func (r *Rotator) kind() string {
	if r.cfg.Request.Serving {
		return "serving"
	}
	return "client"
}
