// Package apiserver is berth's thin Kubernetes REST layer: routing for /api
// and /apis, content negotiation, Status errors, list/watch/get/create/
// update/patch/delete over k8s.io/apiserver's generic registry stores,
// subresources, discovery, /version, health and metrics endpoints.
//
// It is an http.Handler; TLS and the listener belong to the caller
// (controlplane/server). Authentication happens here (Config.Authenticator):
// every request except /healthz, /livez and /readyz needs a credential;
// then Config.Authorizer decides (403 Forbidden in upstream's wording).
package apiserver

import (
	"context"
	"fmt"
	"k8s.io/apiserver/pkg/admission"
	"log/slog"
	"net/http"
	"strings"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"

	"github.com/prometheus/client_golang/prometheus"

	"berth/internal/errdefs"
)

// Config configures the handler.
type Config struct {
	// Scheme knows every served type, with defaulting funcs installed.
	Scheme *runtime.Scheme
	// Resources are the served resources.
	Resources []*Resource
	// Authenticator identifies the caller of each request.
	Authenticator Authenticator
	// Authorizer decides whether the caller may make the request (403
	// Forbidden otherwise); nil allows every authenticated request.
	Authorizer authorizer.Authorizer
	// Admission, when set, is the admission chain: its mutating phase runs
	// before the store (and so before the strategy's validation), its
	// validating phase after the strategy's validation, for create,
	// update, patch and delete of resources and their subresources.
	Admission admission.Interface
	// TypeConverter, when set, enables managedFields tracking and
	// server-side apply (application/apply-patch+yaml); built from the
	// OpenAPI models.
	TypeConverter managedfields.TypeConverter
	// Dynamic, when set, serves resources added while running (custom
	// resources) beside Resources.
	Dynamic Dynamic
	// OpenAPI, when set, serves /openapi/v2 and /openapi/v3[/...].
	OpenAPI http.Handler
	// Ready reports readiness for /readyz (nil: always ready).
	Ready func() error
	// ServerAddress is host:port advertised in /api's serverAddressByClientCIDRs.
	ServerAddress string
	// Metrics receives apiserver_request_total and apiserver_request_duration_seconds.
	Metrics prometheus.Registerer
	// MetricsHandler, when set, serves /metrics (authenticated).
	MetricsHandler http.Handler
	// Profiling serves /debug/pprof (net/http/pprof) to callers authorized
	// for that non-resource path, as kube-apiserver's --profiling.
	Profiling bool
	// Logger for request errors; nil discards.
	Logger *slog.Logger
	// MaxRequestBodyBytes bounds request bodies; default 3 MiB as upstream.
	MaxRequestBodyBytes int64
	// PriorityAndFairness, when set, wraps the handling of every
	// authenticated request, from authorization on (as kube-apiserver's
	// API Priority and Fairness filter: after authentication and
	// impersonation, before authorization); the request info and user
	// are in the request's context.
	PriorityAndFairness func(next http.Handler) http.Handler
	// IssuerDiscovery, when set, serves the service-account issuer
	// discovery documents (/.well-known/openid-configuration,
	// /openid/v1/jwks) to callers authorized for those paths.
	IssuerDiscovery http.Handler
	// Aggregator, when set, serves the group-versions of extension
	// apiservers (service-backed APIServices): their requests, once
	// authenticated and authorized, go to its proxy; their groups join
	// discovery.
	Aggregator Aggregator
}

// Aggregator serves the group-versions extension apiservers serve.
type Aggregator interface {
	// Proxy is the handler of gv when an extension apiserver serves it,
	// nil when it is served here or by nothing.
	Proxy(gv schema.GroupVersion) http.Handler
	// APIGroups are the extension apiservers' groups, for /apis.
	APIGroups() []metav1.APIGroup
	// DiscoveryGroups are their groups for aggregated discovery.
	DiscoveryGroups(ctx context.Context) []apidiscoveryv2.APIGroupDiscovery
}

// Handler serves the REST API.
type Handler struct {
	cfg Config
	// objects gives admission plugins the scheme (conversion, defaulting).
	objects   admission.ObjectInterfaces
	codecs    serializer.CodecFactory
	resources map[schema.GroupVersion]map[string]*Resource
	groups    []schema.GroupVersion // served group versions, core first, in Resources order
	infos     *genericapirequest.RequestInfoFactory
	metrics   *requestMetrics
	profiling http.Handler // nil unless Config.Profiling
	log       *slog.Logger
	managers  map[*Resource]map[string]*managedfields.FieldManager
	// authorized serves an authenticated request: authorization, then
	// the request itself; behind Config.PriorityAndFairness when set.
	authorized http.Handler
}

// New validates cfg and builds the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Scheme == nil || cfg.Authenticator == nil {
		return nil, fmt.Errorf("apiserver: Scheme and Authenticator are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = 3 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		cfg:       cfg,
		codecs:    serializer.NewCodecFactory(cfg.Scheme, serializer.EnableStrict),
		resources: map[schema.GroupVersion]map[string]*Resource{},
		infos: &genericapirequest.RequestInfoFactory{
			APIPrefixes:          sets.NewString("api", "apis"),
			GrouplessAPIPrefixes: sets.NewString("api"),
		},
		log:      cfg.Logger,
		managers: map[*Resource]map[string]*managedfields.FieldManager{},
		objects:  admission.NewObjectInterfacesFromScheme(cfg.Scheme),
	}
	for _, r := range cfg.Resources {
		if r.Store == nil || r.Resource == "" || r.Kind == "" {
			return nil, fmt.Errorf("apiserver: resource %v: Store, Resource and Kind are required: %w", r.GroupVersionResource(), errdefs.ErrInvalidArgument)
		}
		byName := h.resources[r.GroupVersion]
		if byName == nil {
			byName = map[string]*Resource{}
			h.resources[r.GroupVersion] = byName
			if r.GroupVersion.Group == "" {
				h.groups = append([]schema.GroupVersion{r.GroupVersion}, h.groups...)
			} else {
				h.groups = append(h.groups, r.GroupVersion)
			}
		}
		if _, dup := byName[r.Resource]; dup {
			return nil, fmt.Errorf("apiserver: resource %v served twice: %w", r.GroupVersionResource(), errdefs.ErrInvalidArgument)
		}
		byName[r.Resource] = r
		fms, err := h.fieldManagers(r)
		if err != nil {
			return nil, err
		}
		h.managers[r] = fms
	}
	if cfg.Profiling {
		h.profiling = profilingHandler()
	}
	h.authorized = http.HandlerFunc(h.serveAuthorized)
	if cfg.PriorityAndFairness != nil {
		h.authorized = cfg.PriorityAndFairness(h.authorized)
	}
	var err error
	if h.metrics, err = newRequestMetrics(cfg.Metrics); err != nil {
		return nil, err
	}
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusRecorder{ResponseWriter: w}
	verb, resource, subresource := "", "", ""
	defer func() {
		h.metrics.observe(verb, resource, subresource, rw.code(), time.Since(start))
	}()

	switch r.URL.Path {
	case "/healthz", "/livez", "/readyz":
		verb = "get"
		h.serveHealth(rw, r)
		return
	}
	info, err := h.infos.NewRequestInfo(r)
	if err != nil {
		h.writeError(rw, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	verb = strings.ToLower(info.Verb)
	// Label only with served resources: arbitrary paths, even from
	// unauthenticated callers, must not grow the metrics without bound.
	if res, err := h.lookup(info); err == nil && info.IsResourceRequest {
		resource = res.Resource
		if _, ok := res.Subresources[info.Subresource]; ok {
			subresource = info.Subresource
		}
	}
	user, ok := h.cfg.Authenticator.Authenticate(r)
	if !ok {
		h.writeError(rw, r, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	if user, err = h.impersonate(r, user); err != nil {
		h.writeError(rw, r, err)
		return
	}
	ctx := genericapirequest.WithRequestInfo(r.Context(), info)
	ctx = genericapirequest.WithUser(ctx, user)
	warnings := &warningRecorder{}
	ctx = warning.WithWarningRecorder(ctx, warnings)
	rw.warnings = warnings
	h.authorized.ServeHTTP(rw, r.WithContext(ctx))
}

// serveAuthorized authorizes an authenticated request and serves it: an
// extension apiserver's group-version through the aggregator's proxy,
// everything else here.
func (h *Handler) serveAuthorized(w http.ResponseWriter, r *http.Request) {
	if err := h.authorize(r); err != nil {
		h.writeError(w, r, err)
		return
	}
	info, _ := genericapirequest.RequestInfoFrom(r.Context())
	if p := h.aggregated(info); p != nil {
		p.ServeHTTP(w, r)
		return
	}
	if !info.IsResourceRequest {
		h.serveNonResource(w, r)
		return
	}
	h.serveResource(w, r, info)
}

func (h *Handler) serveNonResource(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/version" || p == "/version/":
		h.serveVersion(w, r)
	case p == "/metrics" && h.cfg.MetricsHandler != nil:
		h.cfg.MetricsHandler.ServeHTTP(w, r)
	case h.cfg.IssuerDiscovery != nil && (p == "/.well-known/openid-configuration" || p == "/openid/v1/jwks"):
		h.cfg.IssuerDiscovery.ServeHTTP(w, r)
	case h.profiling != nil && isProfilingPath(p):
		h.profiling.ServeHTTP(w, r)
	case strings.HasPrefix(p, "/openapi/") && h.cfg.OpenAPI != nil:
		h.cfg.OpenAPI.ServeHTTP(w, r)
	case (p == "/api" || p == "/api/") && wantsAggregated(r):
		h.serveAggregated(w, r, true)
	case (p == "/apis" || p == "/apis/") && wantsAggregated(r):
		h.serveAggregated(w, r, false)
	case p == "/api" || p == "/api/":
		h.serveAPIVersions(w, r)
	case p == "/apis" || p == "/apis/":
		h.serveAPIGroupList(w, r)
	case strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/"):
		h.serveDiscoveryPath(w, r)
	default:
		h.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, ""))
	}
}

// aggregated is the aggregator's proxy for a request to an extension
// apiserver's group-version (its resources and its /apis/GROUP/VERSION
// discovery), nil for everything else.
func (h *Handler) aggregated(info *genericapirequest.RequestInfo) http.Handler {
	if h.cfg.Aggregator == nil {
		return nil
	}
	gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	if !info.IsResourceRequest {
		parts := strings.Split(strings.Trim(info.Path, "/"), "/")
		if len(parts) != 3 || parts[0] != "apis" {
			return nil
		}
		gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
	} else if info.APIPrefix != "apis" {
		return nil
	}
	if gv.Group == "" || gv.Version == "" {
		return nil
	}
	return h.cfg.Aggregator.Proxy(gv)
}

// lookup finds the resource of a request, or a NotFound error.
func (h *Handler) lookup(info *genericapirequest.RequestInfo) (*Resource, error) {
	gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	res := h.resources[gv][info.Resource]
	if res == nil && h.cfg.Dynamic != nil {
		res = h.cfg.Dynamic.Lookup(gv, info.Resource)
	}
	if res == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, "")
	}
	if !res.Namespaced && info.Namespace != "" && info.Resource != "namespaces" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, "")
	}
	return res, nil
}

// statusRecorder remembers the status code and writes warning headers
// before the first byte.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	warnings *warningRecorder
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
		if s.warnings != nil {
			for _, w := range s.warnings.list() {
				s.Header().Add("Warning", w)
			}
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (hijack for exec).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
