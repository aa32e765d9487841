package routes

import (
	"context"
	"fmt"
	"net/netip"

	"sigs.k8s.io/knftables"
)

const (
	podRangesSet = "pod-ranges"
	egressChain  = "egress"
)

// syncMasquerade makes the table masquerade what pods send outside the
// cluster's pod ranges: traffic from one of ranges to an address in none of
// them (a node, a server, the world) leaves with this node's address, while
// pod-to-pod traffic between nodes keeps its source. The whole table is
// rewritten in one transaction.
func syncMasquerade(ctx context.Context, nft knftables.Interface, ranges []netip.Prefix) error {
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("berth: masquerade pod traffic leaving the cluster's pod ranges")})
	tx.Add(&knftables.Set{Name: podRangesSet, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag},
		Comment: knftables.PtrTo("every Node's pod CIDRs")})
	tx.Flush(&knftables.Set{Name: podRangesSet})
	for _, p := range disjoint(ranges) {
		tx.Add(&knftables.Element{Set: podRangesSet, Key: []string{p.String()}})
	}
	tx.Add(&knftables.Chain{Name: egressChain, Type: knftables.PtrTo(knftables.NATType),
		Hook: knftables.PtrTo(knftables.PostroutingHook), Priority: knftables.PtrTo(knftables.SNATPriority)})
	tx.Flush(&knftables.Chain{Name: egressChain})
	if len(ranges) > 0 {
		tx.Add(&knftables.Rule{Chain: egressChain, Rule: "ip saddr @" + podRangesSet + " ip daddr != @" + podRangesSet + " masquerade"})
	}
	if err := nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("routes: nftables: %w", err)
	}
	return nil
}

// deleteTable removes the table if it exists.
func deleteTable(ctx context.Context, nft knftables.Interface) error {
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
		return err
	}
	return nil
}

// disjoint drops the prefixes (sorted) another one holds: an interval set
// refuses overlapping elements.
func disjoint(sorted []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range sorted {
		if n := len(out); n > 0 && out[n-1].Overlaps(p) {
			if p.Bits() < out[n-1].Bits() {
				out[n-1] = p
			}
			continue
		}
		out = append(out, p)
	}
	return out
}
