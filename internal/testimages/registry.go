package testimages

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"berth/internal/errdefs"
)

// RegistryConfig configures an in-process registry.
type RegistryConfig struct {
	// Username and Password, when set (both or neither), are required from
	// every client with HTTP basic auth; without them the registry is anonymous.
	Username, Password string
	// Realm is named in the WWW-Authenticate challenge; default "berth-test".
	Realm string
	// Logger receives the registry's request log; nil discards it.
	Logger *slog.Logger
}

// Validate reports a half-set credential pair.
func (c RegistryConfig) Validate() error {
	if (c.Username == "") != (c.Password == "") {
		return fmt.Errorf("testimages: registry config: Username and Password must be set together: %w", errdefs.ErrInvalidArgument)
	}
	if strings.Contains(c.Username, ":") {
		return fmt.Errorf("testimages: registry config: Username %q must not contain ':' (basic auth separator): %w", c.Username, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Registry is an OCI distribution registry served from memory on
// 127.0.0.1 over plain HTTP.
type Registry struct {
	cfg      RegistryConfig
	listener net.Listener
	server   *http.Server
	done     chan error
}

// StartRegistry listens on 127.0.0.1 (a free port) and serves until Close.
func StartRegistry(cfg RegistryConfig) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Realm == "" {
		cfg.Realm = "berth-test"
	}
	opts := []registry.Option{registry.Logger(log.New(io.Discard, "", 0))}
	if cfg.Logger != nil {
		opts = []registry.Option{registry.Logger(slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug))}
	}
	var handler http.Handler = registry.New(opts...)
	if cfg.Username != "" {
		handler = basicAuth(cfg, handler)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testimages: registry listen: %w", err)
	}
	r := &Registry{
		cfg:      cfg,
		listener: l,
		server:   &http.Server{Handler: handler, ErrorLog: log.New(io.Discard, "", 0)},
		done:     make(chan error, 1),
	}
	go func() { r.done <- r.server.Serve(l) }()
	return r, nil
}

// basicAuth answers 401 with a Basic challenge unless the request carries
// cfg's credentials.
func basicAuth(cfg RegistryConfig, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, pass, ok := req.BasicAuth()
		if !ok ||
			subtle.ConstantTimeCompare([]byte(user), []byte(cfg.Username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(cfg.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", cfg.Realm))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// Host is the registry's "127.0.0.1:PORT", the host part of image references.
func (r *Registry) Host() string { return r.listener.Addr().String() }

// Push uploads img as Host()/repoTag (e.g. "berth/busybox:1") with the
// registry's own credentials and returns the full reference.
func (r *Registry) Push(ctx context.Context, repoTag string, img v1.Image) (string, error) {
	auth := authn.Anonymous
	if r.cfg.Username != "" {
		auth = &authn.Basic{Username: r.cfg.Username, Password: r.cfg.Password}
	}
	return push(ctx, r.Host(), repoTag, img, auth)
}

// Push uploads img anonymously over plain HTTP to the registry at host
// ("127.0.0.1:PORT", e.g. a test environment's anonymous registry started
// elsewhere) as host/repoTag and returns the full reference.
func Push(ctx context.Context, host, repoTag string, img v1.Image) (string, error) {
	return push(ctx, host, repoTag, img, authn.Anonymous)
}

func push(ctx context.Context, host, repoTag string, img v1.Image, auth authn.Authenticator) (string, error) {
	ref, err := name.ParseReference(host+"/"+repoTag, name.Insecure, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("testimages: push %q to %q: %v: %w", repoTag, host, err, errdefs.ErrInvalidArgument)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuth(auth)); err != nil {
		return "", fmt.Errorf("testimages: push %s: %w", ref, err)
	}
	return ref.String(), nil
}

// Close stops serving and waits for the server to end.
func (r *Registry) Close() error {
	err := r.server.Close()
	if serr := <-r.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
