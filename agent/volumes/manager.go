// Package volumes sets up and tears down a pod's volumes on the node, the
// way the kubelet's volume manager and its in-tree plugins do: emptyDir,
// hostPath, configMap, secret, downwardAPI and projected volumes under
// <root-dir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>, and the CRI
// mounts that put them into containers (readOnly, subPath, subPathExpr,
// mountPropagation).
//
// configMap, secret, downwardAPI and projected volumes are written with
// agent/volumes/atomic (a timestamped directory behind a ..data symlink), so
// Resync can update running pods without them ever seeing half a change.
// secret and projected volumes live on a tmpfs, as upstream keeps them off
// the node's disks.
//
// persistentVolumeClaim (a bound CSI PersistentVolume), generic ephemeral
// and CSI inline volumes go through the node's registered CSI drivers
// (csi.go): staged at <root-dir>/plugins/kubernetes.io/csi/<driver>/
// <sha256(handle)>/globalmount, published at
// <root-dir>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount. SetUp
// records a FailedMount event for each volume that fails and, with a
// configured back-off, does not retry it before the back-off has passed
// (failedmount.go).
//
// Every method is safe for concurrent use; calls for one pod are serialised.
// SetUp and TearDown are idempotent, and TearDown is always safe to call,
// also for a pod whose SetUp never ran or failed half way.
//
// The agent uses a Manager like this:
//
//	at start:        Reconstruct, then CleanupOrphans(active UIDs) once the pod sources have synced
//	before a pod's sandbox and containers: ms, err := SetUp(ctx, pod)
//	                 (each *MountError was recorded as a FailedMount event; retry until it succeeds)
//	for each container created: mounts, err := ms.Container(c, env)
//	                 (err → CreateContainerConfigError; mounts → the container config's mounts)
//	in the background: RunResync(ctx, DefaultResyncPeriod, pods) (Resync for every pod, every period)
//	after the pod's containers and sandbox are gone: TearDown(ctx, uid), before removing the pod directory
package volumes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// ObjectSource reads the configMaps and secrets that volumes project. An
// object that does not exist is an error wrapping errdefs.ErrNotFound.
type ObjectSource interface {
	// GetConfigMap returns the configMap namespace/name.
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	// GetSecret returns the secret namespace/name.
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// TokenGetter issues service account tokens for projected
// serviceAccountToken sources (the TokenRequest API).
type TokenGetter interface {
	// GetServiceAccountToken requests a token for the service account
	// namespace/name; the answer carries Status.Token and
	// Status.ExpirationTimestamp.
	GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// Config configures a Manager. RootDir is required.
type Config struct {
	// RootDir is the agent's root directory; volumes live under
	// <RootDir>/pods/<uid>/volumes and subPath bind mounts under
	// <RootDir>/pods/<uid>/volume-subpaths.
	RootDir string
	// Logger; default discards.
	Logger *slog.Logger
	// Objects reads configMaps and secrets. Nil: configMap and secret
	// volumes (and projections) fail with errdefs.ErrUnavailable, as on a
	// standalone node without an API server.
	Objects ObjectSource
	// Tokens issues service account tokens. Nil: projected
	// serviceAccountToken sources fail with errdefs.ErrUnavailable.
	Tokens TokenGetter
	// Clock names the atomic writer's directories and times token
	// refreshes; default the real clock.
	Clock clock.Clock
	// NodeAllocatable is the node's allocatable resources: the default for
	// unset container limits in downwardAPI resourceFieldRefs and the
	// upper bound of memory-backed emptyDir sizes. May be empty.
	NodeAllocatable v1.ResourceList
	// Claims reads PersistentVolumeClaims, PersistentVolumes and CSIDriver
	// objects for persistentVolumeClaim, ephemeral and csi volumes (csi.go).
	// Nil: claims fail with errdefs.ErrUnavailable, and inline CSI volumes
	// are set up without a CSIDriver object, as on a standalone node.
	Claims ClaimSource
	// CSI finds the node clients of the registered CSI drivers. Nil: CSI
	// volumes fail with errdefs.ErrUnavailable.
	CSI CSIDrivers
	// Recorder, if set, gets a FailedMount Warning event on the pod for
	// each failed volume set-up (failedmount.go).
	Recorder EventRecorder
	// MountBackOffInitial and MountBackOffMax: after a volume's set-up
	// failed, SetUp does not try it again before MountBackOffInitial has
	// passed, doubling after each further failure up to MountBackOffMax
	// (the agent uses DefaultMountBackOffInitial and DefaultMountBackOffMax,
	// as the kubelet). Zero: every SetUp tries again at once.
	MountBackOffInitial, MountBackOffMax time.Duration
	// RecursiveReadOnly reports that the runtime supports recursive
	// read-only mounts (its RuntimeHandler features say so; containerd 1.6
	// does not). Without it a volumeMount with recursiveReadOnly Enabled
	// fails and IfPossible mounts plain read-only, as upstream.
	RecursiveReadOnly bool
}

func (c *Config) validate() error {
	if c.RootDir == "" {
		return fmt.Errorf("volumes: Config.RootDir is required: %w", errdefs.ErrInvalidArgument)
	}
	if !filepath.IsAbs(c.RootDir) {
		return fmt.Errorf("volumes: Config.RootDir %q must be an absolute path: %w", c.RootDir, errdefs.ErrInvalidArgument)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.MountBackOffInitial < 0 || c.MountBackOffMax < 0 {
		return fmt.Errorf("volumes: Config.MountBackOffInitial and MountBackOffMax must not be negative: %w", errdefs.ErrInvalidArgument)
	}
	if c.MountBackOffMax < c.MountBackOffInitial {
		c.MountBackOffMax = max(c.MountBackOffInitial, DefaultMountBackOffMax)
	}
	return nil
}

// Manager sets up, updates and tears down the volumes of the node's pods.
type Manager struct {
	cfg    Config
	root   string // RootDir with symlinks resolved, as mountinfo shows it
	tokens *tokenCache

	mu   sync.Mutex
	pods map[types.UID]*podLock

	csi csiState // CSI handle locks and the mount back-off (csi.go, failedmount.go)
}

type podLock struct {
	sync.Mutex
	users int
}

// New validates cfg, creates <RootDir>/pods if needed and returns a Manager.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.RootDir, "pods"), 0o750); err != nil {
		return nil, fmt.Errorf("volumes: create %s/pods: %w", cfg.RootDir, err)
	}
	root, err := filepath.EvalSymlinks(cfg.RootDir)
	if err != nil {
		return nil, fmt.Errorf("volumes: resolve root dir: %w", err)
	}
	return &Manager{
		cfg:    cfg,
		root:   root,
		tokens: newTokenCache(cfg.Clock),
		pods:   map[types.UID]*podLock{},
	}, nil
}

// lockPod serialises the calls for one pod; the returned func unlocks.
func (m *Manager) lockPod(uid types.UID) func() {
	m.mu.Lock()
	l := m.pods[uid]
	if l == nil {
		l = &podLock{}
		m.pods[uid] = l
	}
	l.users++
	m.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		m.mu.Lock()
		if l.users--; l.users == 0 {
			delete(m.pods, uid)
		}
		m.mu.Unlock()
	}
}

// MountError is the failure to set up one volume. Its message is the
// kubelet's FailedMount event text: `MountVolume.SetUp failed for volume
// "<name>" : <cause>`; the pod stays in ContainerCreating and SetUp is to be
// retried with back-off.
type MountError struct {
	// Volume is the pod volume's name (for a claim, its PersistentVolume's,
	// as the kubelet reports it).
	Volume string
	// Op is the step that failed: "SetUp" (also when empty) or, for a CSI
	// volume the driver stages, "MountDevice".
	Op string
	// Err is the cause, classified with errdefs.
	Err error
}

func (e *MountError) Error() string {
	op := e.Op
	if op == "" {
		op = "SetUp"
	}
	return fmt.Sprintf("MountVolume.%s failed for volume %q : %v", op, e.Volume, e.Err)
}

func (e *MountError) Unwrap() error { return e.Err }

// SetUp sets up every volume of pod and returns the volumes ready to be
// mounted into the pod's containers. It is idempotent and cheap for a pod
// set up already: what is set up is kept as it is (mounted tmpfs volumes,
// also ones found after an agent restart, are not mounted again; configMap,
// secret, downwardAPI and projected contents are not re-read — that is
// Resync's job). Each volume that fails adds a *MountError to the joined
// error; then no Mounts are returned, the volumes that did succeed stay set
// up, and a volume that failed on its first set-up leaves nothing behind.
func (m *Manager) SetUp(ctx context.Context, pod *v1.Pod) (*Mounts, error) {
	if err := checkPod(pod); err != nil {
		return nil, err
	}
	defer m.lockPod(pod.UID)()
	ms := &Mounts{m: m, pod: pod, volumes: map[string]mountedVolume{}}
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		mv, err := m.setUpWithBackOff(ctx, pod, vol) // a *MountError; FailedMount event
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ms.volumes[vol.Name] = mv
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ms, nil
}

// Resync re-reads the objects of pod's configMap, secret, downwardAPI and
// projected volumes that are set up already and rewrites their payloads, so
// running containers see updates (changed files appear atomically;
// unchanged payloads are not written; service account tokens are renewed
// after 80% of their lifetime). subPath mounts keep what they were bound
// to, as upstream. A volume whose object cannot be read keeps its current
// content, and its *MountError is in the joined error (for a FailedMount
// event); the pod goes on running. Call it every sync period.
func (m *Manager) Resync(ctx context.Context, pod *v1.Pod) error {
	if err := checkPod(pod); err != nil {
		return err
	}
	defer m.lockPod(pod.UID)()
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		k := kindOf(vol)
		if !k.atomic || !isSetUp(m.volumeDir(pod.UID, k.plugin, vol.Name)) {
			continue
		}
		if _, err := m.setUpVolume(ctx, pod, vol, true); err != nil {
			errs = append(errs, &MountError{Volume: vol.Name, Err: err})
		}
	}
	return errors.Join(errs...)
}

func checkPod(pod *v1.Pod) error {
	switch {
	case pod == nil:
		return fmt.Errorf("volumes: pod is nil: %w", errdefs.ErrInvalidArgument)
	case pod.UID == "":
		return fmt.Errorf("volumes: pod %s/%s: metadata.uid is required: %w", pod.Namespace, pod.Name, errdefs.ErrInvalidArgument)
	case !validUID(pod.UID):
		return fmt.Errorf("volumes: pod %s/%s: metadata.uid %q is not a valid directory name: %w", pod.Namespace, pod.Name, pod.UID, errdefs.ErrInvalidArgument)
	}
	return nil
}

// validUID refuses UIDs that would name something other than one
// directory under <root>/pods.
func validUID(uid types.UID) bool {
	s := string(uid)
	return s != "" && s != "." && s != ".." && filepath.Base(s) == s && len(s) <= 255
}
