// Package kubeletapi is the agent's authenticated HTTPS API, served where the
// kubelet serves its own (port 10250) with the kubelet's paths, so the
// apiserver's pods/log, pods/exec, pods/attach and pods/portforward reach it
// unchanged:
//
//	GET  /healthz
//	GET  /pods                                       v1 PodList
//	GET  /containerLogs/{ns}/{pod}/{container}      follow, tailLines (tail), timestamps,
//	                                                 previous, sinceSeconds, sinceTime,
//	                                                 limitBytes, stream
//	GET|POST /exec/{ns}/{pod}[/{uid}]/{container}    command, stdin, stdout, stderr, tty
//	GET|POST /attach/{ns}/{pod}[/{uid}]/{container}  stdin, stdout, stderr, tty
//	GET|POST /portForward/{ns}/{pod}[/{uid}]         port
//	GET  /metrics                                    Prometheus text format
//	GET  /metrics/probes                             the prober's series of /metrics
//	GET  /logs/[PATH]                                the node's log directory (/var/log),
//	                                                 files and listings
//	GET  /stats/summary                              kubelet Summary API (stats/v1alpha1)
//	GET  /metrics/resource                           the kubelet's resource metrics
//	GET  /metrics/cadvisor                           cAdvisor's container metrics
//
// The pods/exec and pods/portforward API's names of the stream and port
// parameters (stdin, stdout, stderr, ports) are accepted as well, so a
// proxy may pass the API's query through unchanged.
//
// Exec, attach and port-forward ask the runtime (CRI) for its streaming URL
// and proxy the upgraded connection to it, as the kubelet does: SPDY and
// legacy WebSocket (channel.k8s.io v1–v4) pass through unchanged, WebSocket
// with v5.channel.k8s.io is translated to SPDY toward the runtime, and
// port-forward over WebSocket (SPDY tunnelled in WebSocket) is untunnelled.
//
// Requests are authenticated and authorized as the kubelet's
// --authentication-token-webhook and --authorization-mode=Webhook do: a
// client certificate signed by a CA in ClientCAFile (common name the user,
// organizations the groups) or a bearer token reviewed by the apiserver
// (TokenReview); then the Authorizer (WebhookAuthorizer: a
// SubjectAccessReview) decides on nodes/NodeName with the subresource the
// path maps to (proxy, log, stats, metrics, pods, healthz) and the verb the
// method maps to. Anonymous requests get 401, refused ones 403.
package kubeletapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/stats"
	"berth/internal/errdefs"
)

// DefaultAddress is where the kubelet serves its API.
const DefaultAddress = ":10250"

// DefaultPodLogDir is the kubelet's pod log directory.
const DefaultPodLogDir = "/var/log/pods"

// DefaultNodeLogDir is the directory the kubelet serves at /logs/.
const DefaultNodeLogDir = "/var/log"

// Runtime is the part of the CRI client the API uses: the streaming URLs and
// a container's status (to learn whether a followed log's container still
// runs). *cri.Client implements it.
type Runtime interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// PodRef names a pod; UID is optional (empty matches any UID) and is set
// when the request path carries one.
type PodRef struct {
	Namespace, Name string
	UID             string
}

// Locator resolves a pod to the runtime's IDs. Implementations return an
// error wrapping errdefs.ErrNotFound when the pod has no ready sandbox or the
// container is not running; the message is shown to the client. CRILocator
// implements it from the kubelet labels on the runtime's objects.
type Locator interface {
	// ContainerID returns the runtime ID of the running container named
	// container in the pod.
	ContainerID(ctx context.Context, pod PodRef, container string) (string, error)
	// SandboxID returns the runtime ID of the pod's ready sandbox.
	SandboxID(ctx context.Context, pod PodRef) (string, error)
}

// Config configures a Server. NodeName, Pods, Locator, Runtime,
// ClientCAFile and Authorizer are required.
type Config struct {
	// Listener, if set, is served instead of listening on Address.
	Listener net.Listener
	// Address is the TCP address to listen on; default DefaultAddress.
	Address string

	// CertFile and KeyFile are the serving certificate and key (PEM). Both
	// empty: a self-signed certificate for NodeName and Addresses is
	// generated into RootDir/pki/kubelet.{crt,key} (reused while it can be
	// read), as the kubelet does.
	CertFile, KeyFile string
	// GetCertificate, when set, gives the serving certificate on each TLS
	// handshake instead (a certificate renewed while serving, as
	// agent/bootstrap's Rotator); CertFile/KeyFile are then not read.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// RootDir is the agent's state directory (required when no CertFile).
	RootDir string
	// NodeName is the Node requests are authorized against (nodes/NodeName)
	// and, with Addresses, goes into a generated certificate's subject
	// alternative names.
	NodeName  string
	Addresses []net.IP
	// ClientCAFile is the PEM bundle client certificates are verified
	// against (the cluster CA: the apiserver's client certificate and the
	// admin users).
	ClientCAFile string
	// TokenReviews, when set, authenticates bearer tokens by TokenReview
	// (the kubelet's --authentication-token-webhook); nil: only client
	// certificates authenticate.
	TokenReviews authenticationv1client.AuthenticationV1Interface
	// TokenCacheTTL is how long a TokenReview's answer is kept; default
	// DefaultTokenCacheTTL.
	TokenCacheTTL time.Duration
	// Authorizer decides every authenticated request, on the kubelet's
	// attributes (see requestAttributes); WebhookAuthorizer asks the
	// apiserver.
	Authorizer authorizer.Authorizer

	// Pods returns the pods the agent runs, with their latest status; it
	// serves /pods and resolves pods for the other paths.
	Pods func() []v1.Pod
	// Locator resolves pods and containers to runtime IDs.
	Locator Locator
	// Runtime is the CRI client.
	Runtime Runtime
	// PodLogDir is the kubelet's pod log directory; default
	// DefaultPodLogDir.
	PodLogDir string
	// NodeLogDir is served read-only at /logs/; default DefaultNodeLogDir.
	NodeLogDir string
	// Metrics is served on /metrics; nil: /metrics answers 404.
	Metrics prometheus.Gatherer
	// Stats, if set, serves /stats/summary, /metrics/resource and
	// /metrics/cadvisor from its latest sample (agent/stats); nil: they
	// answer 404.
	Stats stats.Source
	// Healthy reports why the agent is unhealthy (nil: healthy); optional.
	Healthy func() error
	// Now is the clock (sinceSeconds is resolved against it); default
	// time.Now.
	Now func() time.Time
	// LogPollInterval is how often a followed log is checked for growth;
	// default crilog's.
	LogPollInterval time.Duration
	// Logger; default discards.
	Logger *slog.Logger
}

// validate checks cfg and fills in defaults.
func (cfg *Config) validate() error {
	switch {
	case cfg.NodeName == "":
		return fmt.Errorf("kubeletapi: Config.NodeName is required (requests are authorized against nodes/NodeName): %w", errdefs.ErrInvalidArgument)
	case cfg.Authorizer == nil:
		return fmt.Errorf("kubeletapi: Config.Authorizer is required: %w", errdefs.ErrInvalidArgument)
	case cfg.TokenCacheTTL < 0:
		return fmt.Errorf("kubeletapi: Config.TokenCacheTTL %s: must not be negative: %w", cfg.TokenCacheTTL, errdefs.ErrInvalidArgument)
	case cfg.Pods == nil:
		return fmt.Errorf("kubeletapi: Config.Pods is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Locator == nil:
		return fmt.Errorf("kubeletapi: Config.Locator is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Runtime == nil:
		return fmt.Errorf("kubeletapi: Config.Runtime is required: %w", errdefs.ErrInvalidArgument)
	case cfg.ClientCAFile == "":
		return fmt.Errorf("kubeletapi: Config.ClientCAFile is required (anonymous access is refused): %w", errdefs.ErrInvalidArgument)
	case (cfg.CertFile == "") != (cfg.KeyFile == ""):
		return fmt.Errorf("kubeletapi: Config.CertFile and Config.KeyFile must be given together: %w", errdefs.ErrInvalidArgument)
	case cfg.CertFile == "" && cfg.RootDir == "":
		return fmt.Errorf("kubeletapi: Config.RootDir is required to generate a serving certificate when Config.CertFile is empty: %w", errdefs.ErrInvalidArgument)
	case cfg.LogPollInterval < 0:
		return fmt.Errorf("kubeletapi: Config.LogPollInterval %s: must not be negative: %w", cfg.LogPollInterval, errdefs.ErrInvalidArgument)
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	if cfg.TokenCacheTTL == 0 {
		cfg.TokenCacheTTL = DefaultTokenCacheTTL
	}
	if cfg.PodLogDir == "" {
		cfg.PodLogDir = DefaultPodLogDir
	}
	if cfg.NodeLogDir == "" {
		cfg.NodeLogDir = DefaultNodeLogDir
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
