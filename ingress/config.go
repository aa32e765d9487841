// Package ingress is berth's built-in ingress controller: it serves the
// Ingresses of its IngressClasses (spec.controller DefaultControllerName)
// as an HTTP and HTTPS reverse proxy on the node, the role k3s gives
// Traefik.
//
// It watches IngressClasses, Ingresses, Services, EndpointSlices and
// kubernetes.io/tls Secrets with its own client (`berth up` gives it the
// identity bootstrap.IngressController, whose ClusterRole allows that and
// writing the Ingresses' status, nothing more), builds a route table from
// them on every change (berth/ingress/routes: hosts exact and wildcard,
// Exact and Prefix paths, default backends, TLS certificates by SNI) and
// swaps it in atomically:
// requests in flight and open connections (websockets included) keep going
// while new requests take the new table. Requests go to the ready endpoints
// of the backend Service port, round-robin, with X-Forwarded-For,
// X-Forwarded-Host and X-Forwarded-Proto set (inbound X-Forwarded-*
// headers are not trusted: they are replaced) and the Host header kept;
// connection upgrades (websockets) pass through. A request no rule matches
// is 404, a backend with no ready endpoint 503, one that cannot be reached
// 502. TLS handshakes get the certificate of the matching host, else a
// self-signed default certificate made at start.
//
// The served Ingresses' status.loadBalancer.ingress is set to the node's
// address (Config.StatusAddress).
package ingress

import (
	"fmt"
	"log/slog"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"berth/internal/errdefs"
)

// Defaults for Config.
const (
	// DefaultControllerName is the spec.controller of the classes served.
	DefaultControllerName = "berth.dev/ingress"
	// DefaultClassName is the IngressClass `berth up` creates for it.
	DefaultClassName = "berth"
	// DefaultHTTPAddress and DefaultHTTPSAddress are where it listens.
	DefaultHTTPAddress  = ":80"
	DefaultHTTPSAddress = ":443"
)

// Config configures a Controller.
type Config struct {
	// Client reads the objects and writes the Ingresses' status, with the
	// controller's own identity; required.
	Client kubernetes.Interface
	// ControllerName selects the IngressClasses served; default
	// DefaultControllerName.
	ControllerName string
	// HTTPAddress and HTTPSAddress are the listen addresses (host:port;
	// port 0 picks a free one); defaults DefaultHTTPAddress and
	// DefaultHTTPSAddress.
	HTTPAddress, HTTPSAddress string
	// StatusAddress is the address (an IP, or a host name) written to the
	// served Ingresses' status.loadBalancer.ingress; empty writes no status.
	StatusAddress string
	// Logger; nil discards.
	Logger *slog.Logger
}

// Validate fills the defaults and checks the fields, naming the bad one;
// errors wrap errdefs.ErrInvalidArgument.
func (c *Config) Validate() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("ingress: %s: %s: %w", field, fmt.Sprintf(format, a...), errdefs.ErrInvalidArgument)
	}
	if c.Client == nil {
		return bad("Client", "required")
	}
	if c.ControllerName == "" {
		c.ControllerName = DefaultControllerName
	}
	if c.HTTPAddress == "" {
		c.HTTPAddress = DefaultHTTPAddress
	}
	if c.HTTPSAddress == "" {
		c.HTTPSAddress = DefaultHTTPSAddress
	}
	for _, a := range []struct{ field, value string }{{"HTTPAddress", c.HTTPAddress}, {"HTTPSAddress", c.HTTPSAddress}} {
		if _, _, err := net.SplitHostPort(a.value); err != nil {
			return bad(a.field, "%q is not host:port: %v", a.value, err)
		}
	}
	if c.StatusAddress != "" && net.ParseIP(c.StatusAddress) == nil {
		if errs := validation.IsDNS1123Subdomain(c.StatusAddress); len(errs) > 0 {
			return bad("StatusAddress", "%q is neither an IP address nor a host name: %s", c.StatusAddress, strings.Join(errs, "; "))
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
