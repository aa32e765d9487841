// Package leaderelect runs a function only while this process holds a
// coordination.k8s.io Lease (client-go's leader election), campaigning again
// after each term, so that of several replicas exactly one runs it: the
// controller manager and the scheduler of `berth server`, and
// `berth scheduler --leader-elect`.
package leaderelect

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"berth/internal/errdefs"
)

// Defaults of Timing, client-go's and kube-controller-manager's.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Timing is client-go's leader-election timing.
type Timing struct {
	// LeaseDuration is how long a Lease not renewed keeps the other
	// candidates out; RenewDeadline how long the leader retries renewing
	// before it stops leading; RetryPeriod how often candidates try to
	// acquire or renew. Zero fields take the defaults.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Validate fills the defaults and checks LeaseDuration > RenewDeadline >
// RetryPeriod > 0.
func (t *Timing) Validate() error {
	if t.LeaseDuration == 0 {
		t.LeaseDuration = DefaultLeaseDuration
	}
	if t.RenewDeadline == 0 {
		t.RenewDeadline = DefaultRenewDeadline
	}
	if t.RetryPeriod == 0 {
		t.RetryPeriod = DefaultRetryPeriod
	}
	if !(t.LeaseDuration > t.RenewDeadline && t.RenewDeadline > t.RetryPeriod && t.RetryPeriod > 0) {
		return fmt.Errorf("leader election: want lease duration (%s) > renew deadline (%s) > retry period (%s) > 0: %w",
			t.LeaseDuration, t.RenewDeadline, t.RetryPeriod, errdefs.ErrInvalidArgument)
	}
	return nil
}

// NewIdentity names a candidate: "<hostname>_<random>", distinct per process.
func NewIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "berth"
	}
	return host + "_" + rand.String(8)
}

// Config configures an Elector.
type Config struct {
	// Client writes the Lease; required.
	Client kubernetes.Interface
	// Namespace and Name locate the Lease; required.
	Namespace, Name string
	// Identity names this candidate in the Lease; default NewIdentity().
	Identity string
	Timing
	// Logger logs the terms; nil discards.
	Logger *slog.Logger
}

// Validate fills the defaults and checks every field, naming the bad one.
func (c *Config) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("leader election: Client is required: %w", errdefs.ErrInvalidArgument)
	}
	if c.Namespace == "" || c.Name == "" {
		return fmt.Errorf("leader election: the Lease's Namespace and Name are required: %w", errdefs.ErrInvalidArgument)
	}
	if c.Identity == "" {
		c.Identity = NewIdentity()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c.Timing.Validate()
}

// Elector campaigns for one Lease.
type Elector struct {
	cfg     Config
	log     *slog.Logger
	leading atomic.Bool
}

// New validates cfg.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Elector{cfg: cfg, log: cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)}, nil
}

// Leading reports whether this candidate holds the Lease (runs its term).
func (e *Elector) Leading() bool { return e.leading.Load() }

// Run campaigns for the Lease until ctx ends. Each time it leads it runs
// term, whose context ends when the leadership is lost, and campaigns again
// once term returned; term's error ends Run. The Lease is released when
// term returns and on ctx's end, so another candidate takes over at once.
func (e *Elector) Run(ctx context.Context, term func(context.Context) error) error {
	for ctx.Err() == nil {
		if err := e.campaign(ctx, term); err != nil {
			return err
		}
	}
	return nil
}

// campaign runs one election: until ctx ends or a term it led ended (the
// Lease is released then too).
func (e *Elector) campaign(ctx context.Context, term func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var termErr error
	// The elector starts OnStartedLeading in a goroutine of its own and
	// does not wait for it: termDone does, so a term has ended before the
	// next campaign.
	termDone := make(chan struct{})
	lock := &observedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     e.cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(termDone)
				e.leading.Store(true)
				e.log.Info("leading")
				termErr = term(lctx)
				cancel() // a term that ended on its own ends the election
			},
			OnStoppedLeading: func() {
				e.leading.Store(false)
				e.log.Info("not leading")
			},
			OnNewLeader: func(id string) {
				if id != e.cfg.Identity {
					e.log.Info("another candidate leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election %s/%s: %w", e.cfg.Namespace, e.cfg.Name, err)
	}
	elector.Run(ctx)
	if lock.wrote.Load() { // it led, so OnStartedLeading was started
		<-termDone
	}
	return termErr
}

// observedLock records whether this candidate ever wrote the Lease: only a
// leader does (acquire, renew, release), and the elector starts
// OnStartedLeading exactly when it acquired.
type observedLock struct {
	resourcelock.Interface
	wrote atomic.Bool
}

func (l *observedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if err == nil {
		l.wrote.Store(true)
	}
	return err
}

func (l *observedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	if err == nil {
		l.wrote.Store(true)
	}
	return err
}
