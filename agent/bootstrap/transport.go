package bootstrap

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/connrotation"

	"berth/internal/errdefs"
)

// NewClientRotator is NewRotator for the node's client certificate: it
// also returns a copy of base (server and CA; its credentials dropped)
// that authenticates with the rotator's current certificate on every TLS
// handshake. The rotator renews through a client of that config — the
// node renewing its own credential — and, after each renewal, closes that
// config's connections so the apiserver sees the new certificate on the
// next request, as the kubelet does. cfg.Request.Client is ignored.
func NewClientRotator(base *rest.Config, cfg RotatorConfig) (*Rotator, *rest.Config, error) {
	if cfg.Request.Serving {
		return nil, nil, fmt.Errorf("bootstrap: NewClientRotator: Request.Serving must be false: %w", errdefs.ErrInvalidArgument)
	}
	cfg.Request.Client = nil
	if cfg.Request.NodeName == "" || cfg.Request.Dir == "" {
		return nil, nil, fmt.Errorf("bootstrap: Request: NodeName and Dir are required: %w", errdefs.ErrInvalidArgument)
	}
	dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if base.Dial != nil {
		dial = base.Dial // the agent's balancer across the apiservers
	}
	dialer := connrotation.NewDialer(dial)
	onRotate := cfg.OnRotate
	cfg.OnRotate = func() {
		dialer.CloseAll()
		if onRotate != nil {
			onRotate()
		}
	}
	r, err := newRotator(cfg)
	if err != nil {
		return nil, nil, err
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: base.ServerName, GetClientCertificate: r.GetClientCertificate}
	switch {
	case len(base.CAData) > 0:
		if tlsCfg.RootCAs, err = certutil.NewPoolFromBytes(base.CAData); err != nil {
			return nil, nil, fmt.Errorf("bootstrap: the apiserver's CA: %w", err)
		}
	case base.CAFile != "":
		if tlsCfg.RootCAs, err = certutil.NewPool(base.CAFile); err != nil {
			return nil, nil, fmt.Errorf("bootstrap: the apiserver's CA: %w", err)
		}
	}
	out := rest.CopyConfig(base)
	out.TLSClientConfig = rest.TLSClientConfig{}
	out.BearerToken, out.BearerTokenFile, out.Username, out.Password = "", "", "", ""
	out.ExecProvider, out.AuthProvider = nil, nil
	out.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 25,
		DialContext:         dialer.DialContext,
	})
	if r.cfg.Request.Client, err = kubernetes.NewForConfig(out); err != nil {
		return nil, nil, fmt.Errorf("bootstrap: %w", err)
	}
	return r, out, nil
}
