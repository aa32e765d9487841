// Package registration is the agent side of the kubelet plugin-registration
// protocol (k8s.io/kubelet pluginregistration v1) for CSI drivers. It watches
// <root-dir>/plugins_registry for sockets, as the kubelet's plugin watcher
// does; for each new socket it calls GetInfo, validates the plugin (type
// CSIPlugin, a name, a supported CSI version 1.x, no same-named driver with
// an equal or higher version), connects to the driver's CSI endpoint, calls
// NodeGetInfo, keeps the driver in a registry by name, and reports the
// outcome back through NotifyRegistrationStatus. A driver is deregistered
// when its socket disappears. Failed registrations are retried with back-off.
package registration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"berth/csi/nodeclient"
	"berth/internal/errdefs"
)

// DirName is the name of the registration directory under the agent's root dir.
const DirName = "plugins_registry"

// Config configures the registration watcher.
type Config struct {
	// Dir is the directory plugins put their registration sockets in,
	// <root-dir>/plugins_registry. Required; created if missing.
	Dir string
	// CallTimeout bounds each call to a plugin (GetInfo, NodeGetInfo,
	// NotifyRegistrationStatus). Default 10s.
	CallTimeout time.Duration
	// ResyncPeriod is how often the directory is rescanned even without a
	// filesystem event, which is also when failed registrations are retried.
	// Default 5s.
	ResyncPeriod time.Duration
	// RetryInitial and RetryMax bound the exponential back-off between
	// attempts to register a socket that failed. Defaults 1s and 1m.
	RetryInitial, RetryMax time.Duration
	// OnChange, if set, is called (from Run's goroutine) after each
	// registration and deregistration.
	OnChange func(Event)
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

// Validate checks the config and fills in defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" || !filepath.IsAbs(c.Dir) {
		errs = append(errs, fmt.Errorf("registration dir %q: must be an absolute path: %w", c.Dir, errdefs.ErrInvalidArgument))
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"call timeout", &c.CallTimeout, 10 * time.Second},
		{"resync period", &c.ResyncPeriod, 5 * time.Second},
		{"retry initial", &c.RetryInitial, time.Second},
		{"retry max", &c.RetryMax, time.Minute},
	} {
		if *d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s: must not be negative: %w", d.name, *d.v, errdefs.ErrInvalidArgument))
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.RetryMax < c.RetryInitial {
		errs = append(errs, fmt.Errorf("retry max %s: must not be below retry initial %s: %w", c.RetryMax, c.RetryInitial, errdefs.ErrInvalidArgument))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return errors.Join(errs...)
}

// Driver is a registered CSI driver.
type Driver struct {
	// Name is the CSI driver's name.
	Name string
	// Endpoint is the driver's CSI socket.
	Endpoint string
	// SocketPath is the registration socket it came through.
	SocketPath string
	// Versions are the CSI versions the plugin reported; HighestVersion the highest supported one.
	Versions       []string
	HighestVersion string
	// NodeInfo is what the driver's NodeGetInfo reported at registration.
	NodeInfo nodeclient.NodeInfo
	// Client calls the driver's node service. It is closed when the driver is deregistered.
	Client *nodeclient.Client
}

// EventType tells registrations from deregistrations.
type EventType string

// The event types.
const (
	Registered   EventType = "Registered"
	Deregistered EventType = "Deregistered"
)

// Event is one change in the registry.
type Event struct {
	Type   EventType
	Driver Driver
}

// socketID identifies one incarnation of a socket file: a plugin that
// restarts makes a new socket with the same path.
type socketID struct {
	ino   uint64
	mtime time.Time
}

type registered struct {
	driver  Driver
	id      socketID
	version *utilversion.Version
}

type failure struct {
	id      socketID
	backoff time.Duration
	next    time.Time
}

// Registry watches the registration directory and holds the registered drivers.
type Registry struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	bySocket map[string]*registered // socket path → registration
	changed  chan struct{}
	scanned  chan struct{} // closed after Run's first scan

	failed map[string]*failure // Run's goroutine only
}

// New validates cfg and returns a registry; Run fills it.
func New(cfg Config) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("csi registration config: %w", err)
	}
	return &Registry{
		cfg:      cfg,
		log:      cfg.Logger,
		bySocket: map[string]*registered{},
		changed:  make(chan struct{}),
		scanned:  make(chan struct{}),
		failed:   map[string]*failure{},
	}, nil
}

// Driver returns the registered driver of that name.
func (r *Registry) Driver(name string) (Driver, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, reg := range r.bySocket {
		if reg.driver.Name == name {
			return reg.driver, true
		}
	}
	return Driver{}, false
}

// CSIClient returns the node client of the registered driver name (the
// agent's volume manager looks drivers up with it).
func (r *Registry) CSIClient(name string) (*nodeclient.Client, bool) {
	d, ok := r.Driver(name)
	return d.Client, ok
}

// Drivers returns the registered drivers, sorted by name.
func (r *Registry) Drivers() []Driver {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Driver, 0, len(r.bySocket))
	for _, reg := range r.bySocket {
		out = append(out, reg.driver)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Changed returns a channel closed at the registry's next change.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Scanned returns a channel closed once Run has tried to register every
// socket present when it started: from then on the registry holds every
// driver that could register.
func (r *Registry) Scanned() <-chan struct{} { return r.scanned }

// Run watches the directory until ctx ends, then closes every driver client.
func (r *Registry) Run(ctx context.Context) error {
	if err := os.MkdirAll(r.cfg.Dir, 0o750); err != nil {
		return fmt.Errorf("csi registration: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("csi registration: watch: %w", err)
	}
	defer w.Close()
	if err := w.Add(r.cfg.Dir); err != nil {
		return fmt.Errorf("csi registration: watch %s: %w", r.cfg.Dir, err)
	}
	defer r.deregisterAll()

	tick := time.NewTicker(r.cfg.ResyncPeriod)
	defer tick.Stop()
	r.scan(ctx)
	close(r.scanned)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("csi registration: watcher closed")
			}
			if ev.Op&(fsnotify.Create|fsnotify.Remove|fsnotify.Rename) != 0 {
				r.scan(ctx)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("csi registration: watcher closed")
			}
			r.log.Warn("plugin registration watcher error; rescanning", "err", err)
			r.scan(ctx)
		case <-tick.C:
			r.scan(ctx)
		}
	}
}

// scan compares the sockets in the directory with the registrations: gone
// or replaced sockets are deregistered, new ones registered.
func (r *Registry) scan(ctx context.Context) {
	present, err := r.sockets()
	if err != nil {
		r.log.Error("plugin registration: read dir", "dir", r.cfg.Dir, "err", err)
		return
	}
	r.mu.Lock()
	var gone []string
	for path, reg := range r.bySocket {
		if id, ok := present[path]; !ok || id != reg.id {
			gone = append(gone, path)
		}
	}
	r.mu.Unlock()
	for _, path := range gone {
		r.deregister(path)
	}
	for path := range r.failed {
		if _, ok := present[path]; !ok {
			delete(r.failed, path)
		}
	}

	paths := make([]string, 0, len(present))
	for p := range present {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	now := time.Now()
	for _, path := range paths {
		id := present[path]
		r.mu.Lock()
		_, done := r.bySocket[path]
		r.mu.Unlock()
		if done || ctx.Err() != nil {
			continue
		}
		f := r.failed[path]
		if f != nil && f.id == id && now.Before(f.next) {
			continue
		}
		if err := r.register(ctx, path, id); err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff := r.cfg.RetryInitial
			if f != nil && f.id == id {
				backoff = min(2*f.backoff, r.cfg.RetryMax)
			}
			r.failed[path] = &failure{id: id, backoff: backoff, next: time.Now().Add(backoff)}
			r.log.Error("plugin registration failed", "socket", path, "err", err, "retryIn", backoff)
			continue
		}
		delete(r.failed, path)
	}
}

// sockets lists the registration sockets in the directory. Like the
// kubelet's watcher, it ignores names starting with '.' and anything that is
// not a socket.
func (r *Registry) sockets() (map[string]socketID, error) {
	entries, err := os.ReadDir(r.cfg.Dir)
	if err != nil {
		return nil, err
	}
	out := map[string]socketID{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.Type()&os.ModeSocket == 0 {
			continue
		}
		path := filepath.Join(r.cfg.Dir, e.Name())
		fi, err := os.Lstat(path)
		if err != nil {
			continue // removed meanwhile
		}
		id := socketID{mtime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			id.ino = st.Ino
		}
		out[path] = id
	}
	return out, nil
}

// register runs the registration protocol with the plugin at path.
func (r *Registry) register(ctx context.Context, path string, id socketID) error {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", path, err)
	}
	defer conn.Close()
	plugin := registerapi.NewRegistrationClient(conn)

	callCtx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	info, err := plugin.GetInfo(callCtx, &registerapi.InfoRequest{})
	cancel()
	if err != nil {
		return fmt.Errorf("GetInfo from %s: %w", path, err)
	}

	drv, version, err := r.admit(ctx, path, info)
	if err != nil {
		r.notify(ctx, plugin, false, err.Error())
		return err
	}
	if err := r.notify(ctx, plugin, true, ""); err != nil {
		drv.Client.Close()
		return fmt.Errorf("NotifyRegistrationStatus to %s: %w", path, err)
	}

	r.mu.Lock()
	var replaced []string
	for p, reg := range r.bySocket {
		if reg.driver.Name == drv.Name {
			replaced = append(replaced, p) // a newer version of the driver took over
		}
	}
	r.mu.Unlock()
	for _, p := range replaced {
		r.deregister(p)
	}
	r.mu.Lock()
	r.bySocket[path] = &registered{driver: drv, id: id, version: version}
	r.changedLocked()
	r.mu.Unlock()
	r.log.Info("CSI driver registered", "driver", drv.Name, "endpoint", drv.Endpoint, "version", version.String(), "nodeID", drv.NodeInfo.NodeID)
	if r.cfg.OnChange != nil {
		r.cfg.OnChange(Event{Type: Registered, Driver: drv})
	}
	return nil
}

// admit validates the plugin's info, connects to its CSI endpoint and asks
// it for its node info, as the kubelet's CSI registration handler does.
func (r *Registry) admit(ctx context.Context, path string, info *registerapi.PluginInfo) (Driver, *utilversion.Version, error) {
	if info.GetType() != registerapi.CSIPlugin {
		return Driver{}, nil, fmt.Errorf("plugin at %s is of type %q; this agent registers only %q plugins: %w", path, info.GetType(), registerapi.CSIPlugin, errdefs.ErrInvalidArgument)
	}
	name := info.GetName()
	if name == "" {
		return Driver{}, nil, fmt.Errorf("plugin at %s reported an empty name: %w", path, errdefs.ErrInvalidArgument)
	}
	if len(info.GetSupportedVersions()) == 0 {
		return Driver{}, nil, fmt.Errorf("CSI driver %q reported no supported versions: %w", name, errdefs.ErrInvalidArgument)
	}
	version, err := utilversion.HighestSupportedVersion(info.GetSupportedVersions())
	if err != nil {
		return Driver{}, nil, fmt.Errorf("CSI driver %q: none of the versions %q is supported (need 1.x): %v: %w", name, info.GetSupportedVersions(), err, errdefs.ErrUnimplemented)
	}
	r.mu.Lock()
	for p, reg := range r.bySocket {
		if reg.driver.Name == name && p != path && !reg.version.LessThan(version) {
			r.mu.Unlock()
			return Driver{}, nil, fmt.Errorf("CSI driver %q is already registered (through %s) with version %s, not lower than %s: %w", name, p, reg.version, version, errdefs.ErrAlreadyExists)
		}
	}
	r.mu.Unlock()

	endpoint := info.GetEndpoint()
	if endpoint == "" {
		endpoint = path // the plugin serves CSI on its registration socket
	}
	client, err := nodeclient.New(nodeclient.Config{Driver: name, Endpoint: endpoint, CallTimeout: r.cfg.CallTimeout})
	if err != nil {
		return Driver{}, nil, fmt.Errorf("CSI driver %q: endpoint: %w", name, err)
	}
	nodeInfo, err := client.NodeGetInfo(ctx)
	if err != nil {
		client.Close()
		return Driver{}, nil, fmt.Errorf("CSI driver %q: %w", name, err)
	}
	return Driver{
		Name:           name,
		Endpoint:       client.Endpoint(),
		SocketPath:     path,
		Versions:       info.GetSupportedVersions(),
		HighestVersion: version.String(),
		NodeInfo:       nodeInfo,
		Client:         client,
	}, version, nil
}

func (r *Registry) notify(ctx context.Context, plugin registerapi.RegistrationClient, ok bool, msg string) error {
	callCtx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	_, err := plugin.NotifyRegistrationStatus(callCtx, &registerapi.RegistrationStatus{PluginRegistered: ok, Error: msg})
	if err != nil && !ok {
		r.log.Warn("could not tell the plugin its registration failed", "err", err)
	}
	return err
}

// deregister drops the registration that came through the socket at path.
func (r *Registry) deregister(path string) {
	r.mu.Lock()
	reg, ok := r.bySocket[path]
	if ok {
		delete(r.bySocket, path)
		r.changedLocked()
	}
	r.mu.Unlock()
	if !ok {
		return
	}
	reg.driver.Client.Close()
	r.log.Info("CSI driver deregistered", "driver", reg.driver.Name, "socket", path)
	if r.cfg.OnChange != nil {
		r.cfg.OnChange(Event{Type: Deregistered, Driver: reg.driver})
	}
}

func (r *Registry) deregisterAll() {
	r.mu.Lock()
	paths := make([]string, 0, len(r.bySocket))
	for p := range r.bySocket {
		paths = append(paths, p)
	}
	r.mu.Unlock()
	for _, p := range paths {
		r.deregister(p)
	}
}

func (r *Registry) changedLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}
