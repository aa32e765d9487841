// Package cri is berth's typed client for the Kubernetes Container Runtime
// Interface (k8s.io/cri-api runtime/v1) over a unix socket.
//
// Every method translates errors once, at this boundary: the gRPC code becomes
// an errdefs class (test with errors.Is), the runtime's message is kept
// verbatim. Stop and remove are idempotent for the caller: an object already
// gone counts as stopped or removed.
package cri

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
)

const (
	// DefaultConnectTimeout bounds dialing and the Version handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultCallTimeout bounds each unary call unless the caller's context is shorter.
	DefaultCallTimeout = 2 * time.Minute
	// MaxMessageSize is the largest gRPC message sent or received, as the kubelet uses.
	MaxMessageSize = 16 << 20
)

// Config configures a Client. The zero durations take the defaults.
type Config struct {
	// Endpoint is the runtime's socket: "unix:///path/containerd.sock" or a bare path.
	Endpoint string
	// ConnectTimeout bounds dialing and the Version handshake; default 10s.
	ConnectTimeout time.Duration
	// CallTimeout bounds each unary call unless the caller's context ends
	// earlier; default 2m. PullImage is bounded by its context only.
	CallTimeout time.Duration
	// UnaryInterceptors wrap every unary call, first outermost (metrics,
	// tracing); optional.
	UnaryInterceptors []grpc.UnaryClientInterceptor
}

// validate checks cfg, fills in defaults and returns the gRPC dial target.
func (cfg *Config) validate() (string, error) {
	if cfg.ConnectTimeout < 0 {
		return "", fmt.Errorf("cri config: ConnectTimeout %v: must not be negative: %w", cfg.ConnectTimeout, errdefs.ErrInvalidArgument)
	}
	if cfg.CallTimeout < 0 {
		return "", fmt.Errorf("cri config: CallTimeout %v: must not be negative: %w", cfg.CallTimeout, errdefs.ErrInvalidArgument)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	return dialTarget(cfg.Endpoint)
}

// dialTarget turns an endpoint ("unix:///p" or "/p") into a gRPC target.
func dialTarget(endpoint string) (string, error) {
	path := endpoint
	switch {
	case endpoint == "":
		return "", fmt.Errorf("cri config: Endpoint: must be set (e.g. unix:///run/containerd/containerd.sock): %w", errdefs.ErrInvalidArgument)
	case strings.HasPrefix(endpoint, "unix://"):
		path = strings.TrimPrefix(endpoint, "unix://")
	case strings.Contains(endpoint, "://"):
		return "", fmt.Errorf("cri config: Endpoint %q: only unix sockets are supported: %w", endpoint, errdefs.ErrInvalidArgument)
	}
	if path == "" {
		return "", fmt.Errorf("cri config: Endpoint %q: no socket path: %w", endpoint, errdefs.ErrInvalidArgument)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("cri config: Endpoint %q: %v: %w", endpoint, err, errdefs.ErrInvalidArgument)
	}
	return "unix://" + abs, nil
}

// Client is a CRI v1 client. It is safe for concurrent use.
type Client struct {
	cfg     Config
	conn    *grpc.ClientConn
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
	version *runtimeapi.VersionResponse
}

// reconnect is how the client redials a runtime that went away, as the
// kubelet's runtime client does: back-off from 100 ms to at most 3 s (gRPC's
// default grows to 2 minutes), so a restarted runtime is used again within
// seconds.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// New dials the runtime and performs the Version handshake within
// cfg.ConnectTimeout. A runtime that does not serve runtime.v1.RuntimeService
// gives an error wrapping errdefs.ErrUnimplemented.
func New(ctx context.Context, cfg Config) (*Client, error) {
	target, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMessageSize),
			grpc.MaxCallSendMsgSize(MaxMessageSize),
		),
		grpc.WithChainUnaryInterceptor(cfg.UnaryInterceptors...),
		grpc.WithConnectParams(reconnect),
	)
	if err != nil {
		return nil, fmt.Errorf("cri: dial %s: %v: %w", cfg.Endpoint, err, errdefs.ErrInvalidArgument)
	}
	c := &Client{
		cfg:     cfg,
		conn:    conn,
		runtime: runtimeapi.NewRuntimeServiceClient(conn),
		images:  runtimeapi.NewImageServiceClient(conn),
	}
	hctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	// Wait for the socket to accept us (it may be starting), within the handshake budget.
	v, err := c.runtime.Version(hctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true))
	if err != nil {
		_ = conn.Close()
		err = translate("Version", cfg.Endpoint, err)
		if errors.Is(err, errdefs.ErrUnimplemented) {
			return nil, fmt.Errorf("cri: runtime at %s does not speak CRI v1 (runtime.v1.RuntimeService): %w", cfg.Endpoint, err)
		}
		return nil, err
	}
	c.version = v
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// RuntimeVersion returns the runtime's answer to the Version handshake made by New.
func (c *Client) RuntimeVersion() *runtimeapi.VersionResponse { return c.version }

// callCtx bounds a unary call by CallTimeout unless ctx ends earlier.
func (c *Client) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= c.cfg.CallTimeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.cfg.CallTimeout)
}
