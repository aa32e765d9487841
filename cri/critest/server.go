// Package critest is an in-memory CRI v1 runtime for unit tests. It serves
// runtime.v1.RuntimeService and runtime.v1.ImageService over real gRPC on a
// unix socket, keeps sandboxes, containers and images in memory with the state
// transitions and status codes containerd 1.6 has (NotFound for unknown IDs,
// AlreadyExists for reserved names, ...), and lets tests inject faults and
// delays per method, make containers exit, and decide which images "the
// registry" has. It is safe for concurrent use.
package critest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"berth/internal/unixsock"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecHandler answers ExecSync for a running container. It must return when
// ctx ends (ExecSync's timeout or the caller going away).
type ExecHandler func(ctx context.Context, containerID string, cmd []string) (stdout, stderr []byte, exitCode int32, err error)

// Option configures a Server at creation.
type Option func(*Server)

// WithRuntime sets the runtime name and version that Version answers
// (default "critest", "1.6.20").
func WithRuntime(name, version string) Option {
	return func(s *Server) { s.runtimeName, s.runtimeVersion = name, version }
}

// WithoutContainerEvents makes GetContainerEvents answer Unimplemented, as
// containerd 1.6 does.
func WithoutContainerEvents() Option {
	return func(s *Server) { s.eventsDisabled = true }
}

// WithSandboxImage makes the verbose Status report ref as the sandbox image
// in its config, as containerd's CRI plugin does ("sandboxImage").
func WithSandboxImage(ref string) Option {
	return func(s *Server) { s.sandboxImage = ref }
}

// WithImageFsMountpoint sets the mount point ImageFsInfo reports (default
// containerd's overlayfs snapshotter directory).
func WithImageFsMountpoint(dir string) Option {
	return func(s *Server) { s.imageFsMountpoint = dir }
}

// Server is the fake runtime. Create it with NewServer.
type Server struct {
	endpoint string
	grpc     *grpc.Server

	sandboxImage      string
	imageFsMountpoint string

	runtimeName, runtimeVersion string
	eventsDisabled              bool

	mu             sync.Mutex
	sandboxes      map[string]*sandbox
	containers     map[string]*container
	sandboxNames   map[string]string // reserved sandbox name → ID
	containerNames map[string]string // reserved container name → ID
	images         map[string]*image // by ID
	registry       map[string]*registryImage
	faults         map[string]*fault
	calls          map[string]int
	conditions     []*runtimeapi.RuntimeCondition
	exec           ExecHandler
	stopExitCode   int32
	stopReason     string
	podCIDR        string
	stopTimeouts   map[string]int64 // container ID → Timeout of its last StopContainer
	nextIP         uint32
	subscribers    map[*subscriber]struct{}
}

// fault is what Inject, InjectN and Delay set for one method.
type fault struct {
	err       error
	remaining int // calls left to fail; <= 0 with err set: every call
	release   <-chan struct{}
	arrived   chan struct{}
}

// NewServer starts a fake runtime on a unix socket in a temporary directory
// and stops it when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		runtimeName:    "critest",
		runtimeVersion: "1.6.20",
		sandboxes:      map[string]*sandbox{},
		containers:     map[string]*container{},
		sandboxNames:   map[string]string{},
		containerNames: map[string]string{},
		images:         map[string]*image{},
		registry:       map[string]*registryImage{},
		faults:         map[string]*fault{},
		stopTimeouts:   map[string]int64{},
		calls:          map[string]int{},
		conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		},
		exec: func(context.Context, string, []string) ([]byte, []byte, int32, error) {
			return nil, nil, 0, nil
		},
		stopExitCode: 137,
		stopReason:   "Error",
		subscribers:  map[*subscriber]struct{}{},
	}
	for _, o := range opts {
		o(s)
	}
	sock := socketPath(t)
	lis, err := unixsock.Listen(sock)
	if err != nil {
		t.Fatalf("critest: listen on %s: %v", sock, err)
	}
	s.endpoint = "unix://" + sock
	s.grpc = grpc.NewServer(
		grpc.ChainUnaryInterceptor(s.unaryFaults),
		grpc.ChainStreamInterceptor(s.streamFaults),
		grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(64<<20),
	)
	runtimeapi.RegisterRuntimeServiceServer(s.grpc, &runtimeService{s: s})
	runtimeapi.RegisterImageServiceServer(s.grpc, &imageService{s: s})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.grpc.Serve(lis)
	}()
	t.Cleanup(func() {
		s.grpc.Stop()
		<-served
	})
	return s
}

// socketPath picks a socket path in a test temp dir, short enough for a unix
// socket (108 bytes).
func socketPath(t testing.TB) string {
	p := filepath.Join(t.TempDir(), "cri.sock")
	if len(p) < 100 {
		return p
	}
	dir, err := os.MkdirTemp("", "critest")
	if err != nil {
		t.Fatalf("critest: temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "cri.sock")
}

// Endpoint is the server's CRI endpoint, "unix:///…/cri.sock".
func (s *Server) Endpoint() string { return s.endpoint }

// knownMethods are the methods of the two CRI services, for checking names.
var knownMethods = func() map[string]bool {
	m := map[string]bool{}
	for _, d := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		for _, md := range d.Methods {
			m[md.MethodName] = true
		}
		for _, sd := range d.Streams {
			m[sd.StreamName] = true
		}
	}
	return m
}()

func (s *Server) setFault(method string, update func(f *fault)) {
	if !knownMethods[method] {
		panic("critest: unknown CRI method " + method)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[method]
	if f == nil {
		f = &fault{}
		s.faults[method] = f
	}
	update(f)
}

// Inject makes every later call of method (a CRI method name such as
// "StopContainer") fail with err until Clear. Use a gRPC status error
// (status.Error(codes.X, msg)) to choose the code; other errors arrive as
// codes.Unknown. It panics on a method the CRI does not have.
func (s *Server) Inject(method string, err error) {
	s.setFault(method, func(f *fault) { f.err, f.remaining = err, 0 })
}

// InjectN makes the next n calls of method fail with err; later calls succeed.
func (s *Server) InjectN(method string, err error, n int) {
	if n <= 0 {
		panic("critest: InjectN needs n > 0")
	}
	s.setFault(method, func(f *fault) { f.err, f.remaining = err, n })
}

// Delay holds every later call of method until release is closed or the
// caller's context ends (the call then fails with the context's code). The
// returned channel receives a value each time a call starts waiting, so a test
// knows the call arrived. Clear removes the delay.
func (s *Server) Delay(method string, release <-chan struct{}) <-chan struct{} {
	arrived := make(chan struct{}, 1024)
	s.setFault(method, func(f *fault) { f.release, f.arrived = release, arrived })
	return arrived
}

// Clear removes the faults and delays set for method.
func (s *Server) Clear(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.faults, method)
}

// Calls reports how many times method was called (faulted calls included).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// enter counts a call and applies its fault: wait for a delay, then fail if
// an error is injected.
func (s *Server) enter(ctx context.Context, fullMethod string) error {
	method := path.Base(fullMethod)
	s.mu.Lock()
	s.calls[method]++
	f := s.faults[method]
	var release <-chan struct{}
	var arrived chan struct{}
	var err error
	if f != nil {
		release, arrived = f.release, f.arrived
		if f.err != nil {
			err = f.err
			if f.remaining > 0 {
				f.remaining--
				if f.remaining == 0 {
					f.err = nil
				}
			}
		}
	}
	s.mu.Unlock()
	if release != nil {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return err
}

func (s *Server) unaryFaults(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.enter(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) streamFaults(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.enter(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

// SetCondition sets a runtime condition that Status reports (e.g.
// runtimeapi.NetworkReady false with a reason and message).
func (s *Server) SetCondition(condType string, ready bool, reason, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conditions {
		if c.Type == condType {
			c.Status, c.Reason, c.Message = ready, reason, message
			return
		}
	}
	s.conditions = append(s.conditions, &runtimeapi.RuntimeCondition{Type: condType, Status: ready, Reason: reason, Message: message})
}

// SetExecHandler sets the function answering ExecSync (default: exit 0, no output).
func (s *Server) SetExecHandler(h ExecHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exec = h
}

// SetStopResult sets the exit code and reason a running container gets when
// StopContainer or StopPodSandbox stops it (default 137, "Error": killed
// after its grace period, as a shell ignoring SIGTERM is).
func (s *Server) SetStopResult(exitCode int32, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopExitCode, s.stopReason = exitCode, reason
}

// LastStopTimeout returns the Timeout (seconds) of the last StopContainer
// call for a container, even one since removed.
func (s *Server) LastStopTimeout(containerID string) (seconds int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seconds, ok = s.stopTimeouts[containerID]
	return seconds, ok
}

// PodCIDR returns the pod CIDR last set with UpdateRuntimeConfig.
func (s *Server) PodCIDR() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.podCIDR
}

// newID returns a random 64-hex-digit ID, like containerd's.
func newID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// now is the time stamp for state changes, in Unix nanoseconds.
func now() int64 { return time.Now().UnixNano() }

// matchLabels reports whether labels has every key=value of selector, as the
// CRI's label_selector (MatchLabels only, ANDed) requires.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// errf builds a gRPC status error.
func errf(code codes.Code, format string, args ...any) error {
	return status.Errorf(code, format, args...)
}
