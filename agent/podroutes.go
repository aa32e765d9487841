package agent

import (
	"fmt"

	"berth/cni/routes"
	"berth/internal/supervisor"
)

// podRoutes runs the routes to the other Nodes' pod CIDRs and the
// masquerading of pod traffic leaving the pod ranges (cni/routes), with
// Warning Events on this Node for peers it cannot route to.
func (a *Agent) podRoutes(run *supervisor.Supervisor, n *conn, p *pods) error {
	cfg := &a.cfg
	c, err := routes.New(routes.Config{
		Client: n.kube, NodeName: cfg.NodeName, Table: cfg.EgressTable, KeepTableOnStop: !cfg.ProxyCleanupOnExit,
		Recorder: p.recorder, Logger: cfg.Logger.With("component", "pod-routes"),
	})
	if err != nil {
		return fmt.Errorf("agent: pod routes (--disable-pod-routes turns them off): %w", err)
	}
	run.Go("pod routes", c.Run)
	return nil
}
