package routes

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/knftables"

	"berth/internal/errdefs"
)

// DefaultResyncPeriod is how often the routes are re-asserted besides the
// Node and route events.
const DefaultResyncPeriod = 30 * time.Second

// EventNoRoute is the reason of the Warning Event on this node's Node when a
// peer's pod CIDR cannot be routed (see Unreachable.Message).
const EventNoRoute = "NoRouteToPodCIDR"

// EventRecorder records Events (client-go's record.EventRecorder has it).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Config configures a Controller.
type Config struct {
	// Client lists and watches the Nodes.
	Client kubernetes.Interface
	// NodeName is this node.
	NodeName string
	// Table is the nftables table (ip family) the masquerading rule lives in.
	Table string
	// KeepTableOnStop leaves the table (and always the routes) when Run
	// returns, so pod traffic keeps flowing while the agent restarts.
	KeepTableOnStop bool
	// ResyncPeriod re-asserts everything; zero is DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// Recorder receives the Warning Events for unreachable peers; optional.
	Recorder EventRecorder
	// Logger; nil discards.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	bad := func(field, msg string) error {
		return fmt.Errorf("routes config: %s: %s: %w", field, msg, errdefs.ErrInvalidArgument)
	}
	switch {
	case c.Client == nil:
		return bad("Client", "required")
	case c.NodeName == "":
		return bad("NodeName", "required")
	case c.Table == "":
		return bad("Table", "required")
	case c.ResyncPeriod < 0:
		return bad("ResyncPeriod", "must not be negative")
	}
	if c.ResyncPeriod == 0 {
		c.ResyncPeriod = DefaultResyncPeriod
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Controller keeps this node's routes to its peers' pod CIDRs and the
// masquerading of pod traffic leaving the pod ranges.
type Controller struct {
	cfg  Config
	nft  knftables.Interface
	kick chan struct{}
	// warned are the unreachable peers already reported (by Message).
	warned map[string]bool
}

// New validates cfg and returns a Controller.
func New(cfg Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	nft, err := knftables.New(knftables.IPv4Family, cfg.Table)
	if err != nil {
		return nil, fmt.Errorf("routes: nftables: %w", err)
	}
	return &Controller{cfg: cfg, nft: nft, kick: make(chan struct{}, 1), warned: map[string]bool{}}, nil
}

func (c *Controller) trigger() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run watches the Nodes, the routes and the addresses and keeps the plan
// applied until ctx ends. Failures to apply are logged and retried.
func (c *Controller) Run(ctx context.Context) error {
	log := c.cfg.Logger
	factory := informers.NewSharedInformerFactory(c.cfg.Client, 0)
	nodes := factory.Core().V1().Nodes()
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.trigger() },
		UpdateFunc: func(old, cur any) { c.nodeUpdated(old, cur) },
		DeleteFunc: func(any) { c.trigger() },
	}); err != nil {
		return fmt.Errorf("routes: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()

	done := make(chan struct{})
	defer close(done)
	routeCh := make(chan netlink.RouteUpdate, 16)
	addrCh := make(chan netlink.AddrUpdate, 16)
	subErr := func(err error) { log.Warn("netlink subscription failed; relying on the periodic resync", "err", err) }
	if err := netlink.RouteSubscribeWithOptions(routeCh, done, netlink.RouteSubscribeOptions{ErrorCallback: subErr}); err != nil {
		subErr(err)
	}
	if err := netlink.AddrSubscribeWithOptions(addrCh, done, netlink.AddrSubscribeOptions{ErrorCallback: subErr}); err != nil {
		subErr(err)
	}
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return c.stop()
	}
	resync := time.NewTicker(c.cfg.ResyncPeriod)
	defer resync.Stop()
	var retry <-chan time.Time
	c.trigger()
	for {
		select {
		case <-ctx.Done():
			return c.stop()
		case u, ok := <-routeCh:
			if !ok {
				routeCh = nil
				continue
			}
			if u.Type == unix.RTM_DELROUTE && u.Protocol == Protocol {
				log.Info("a pod route was deleted; re-asserting it", "dst", u.Dst)
				c.trigger()
			}
			continue
		case _, ok := <-addrCh:
			if !ok {
				addrCh = nil
				continue
			}
			c.trigger()
			continue
		case <-resync.C:
		case <-retry:
		case <-c.kick:
		}
		retry = nil
		list, err := nodes.Lister().List(labels.Everything())
		if err == nil {
			err = c.sync(ctx, list)
		}
		if err != nil {
			log.Error("syncing the pod routes failed; retrying", "err", err)
			retry = time.After(time.Second)
		}
	}
}

// nodeUpdated triggers a sync when what routing depends on changed (not on
// every status heartbeat).
func (c *Controller) nodeUpdated(old, cur any) {
	o, ok1 := old.(*v1.Node)
	n, ok2 := cur.(*v1.Node)
	if !ok1 || !ok2 || !slices.Equal(podCIDRs(o), podCIDRs(n)) || internalIP(o) != internalIP(n) {
		c.trigger()
	}
}

// sync applies the plan for nodes.
func (c *Controller) sync(ctx context.Context, nodes []*v1.Node) error {
	local, err := localSubnets()
	if err != nil {
		return err
	}
	plan := Compute(c.cfg.NodeName, nodes, local)
	added, removed, routeErr := applyRoutes(plan.Routes)
	if len(added) > 0 || len(removed) > 0 {
		c.cfg.Logger.Info("pod routes updated", "added", added, "removed", removed)
	}
	c.report(plan.Unreachable)
	if err := syncMasquerade(ctx, c.nft, plan.PodRanges); err != nil {
		return fmt.Errorf("%w (routes: %v)", err, routeErr)
	}
	return routeErr
}

// report logs and records a Warning Event once per unreachable peer (and
// again if it becomes reachable and then unreachable).
func (c *Controller) report(unreachable []Unreachable) {
	now := map[string]bool{}
	for _, u := range unreachable {
		msg := u.Message()
		now[msg] = true
		if c.warned[msg] {
			continue
		}
		c.cfg.Logger.Warn("no route to a peer's pod CIDR", "peer", u.Node, "podCIDR", u.PodCIDR, "internalIP", u.InternalIP, "why", msg)
		if c.cfg.Recorder != nil {
			ref := &v1.ObjectReference{Kind: "Node", Name: c.cfg.NodeName, UID: types.UID(c.cfg.NodeName)}
			c.cfg.Recorder.Eventf(ref, v1.EventTypeWarning, EventNoRoute, "%s", msg)
		}
	}
	c.warned = now
}

// stop deletes the table unless it is kept; the routes stay either way
// (pods keep reaching each other while the agent is away).
func (c *Controller) stop() error {
	if c.cfg.KeepTableOnStop {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := deleteTable(ctx, c.nft); err != nil {
		c.cfg.Logger.Error("deleting the masquerading table failed", "table", c.cfg.Table, "err", strings.TrimSpace(err.Error()))
	}
	return nil
}
