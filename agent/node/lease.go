package node

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// leaseLoop renews the node's Lease every quarter of LeaseDuration (10 s by
// default), retrying failures with back-off capped at the renew interval.
func (m *Manager) leaseLoop(ctx context.Context) {
	interval := m.cfg.LeaseDuration / 4
	backoff := initialBackoff
	for {
		wait := interval
		if err := m.renewLease(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			m.cfg.Logger.Warn("renewing the node lease failed", "node", m.cfg.NodeName, "err", err)
			wait = min(backoff, interval)
			backoff = min(2*backoff, maxBackoff)
		} else {
			backoff = initialBackoff
		}
		if !m.sleep(ctx, wait) {
			return
		}
	}
}

// renewLease creates the Lease or sets its renewTime to now, with the
// node's identity and an owner reference to the Node (so the Lease goes
// when the Node does). It renews from the copy the last renewal returned,
// reading the Lease again only after a failure.
func (m *Manager) renewLease(ctx context.Context) error {
	leases := m.cfg.Client.CoordinationV1().Leases(LeaseNamespace)
	now := metav1.NewMicroTime(m.cfg.Clock.Now())
	lease := m.lease
	m.lease = nil
	if lease == nil {
		got, err := leases.Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.cfg.NodeName, Namespace: LeaseNamespace}}
			m.setLease(lease, now)
			created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create lease %s/%s: %w", LeaseNamespace, m.cfg.NodeName, err)
			}
			m.lease = created
			return nil
		case err != nil:
			return fmt.Errorf("get lease %s/%s: %w", LeaseNamespace, m.cfg.NodeName, err)
		}
		lease = got
	}
	m.setLease(lease, now)
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("renew lease %s/%s: %w", LeaseNamespace, m.cfg.NodeName, err)
	}
	m.lease = updated
	return nil
}

// setLease fills in the lease's spec for a renewal at now and its owner
// reference once the Node's UID is known.
func (m *Manager) setLease(lease *coordinationv1.Lease, now metav1.MicroTime) {
	lease.Spec.HolderIdentity = ptr.To(m.cfg.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(m.cfg.LeaseDuration / time.Second))
	lease.Spec.RenewTime = &now
	m.mu.Lock()
	uid := m.nodeUID
	m.mu.Unlock()
	if uid == "" {
		return
	}
	for _, ref := range lease.OwnerReferences {
		if ref.Kind == "Node" && ref.UID == uid {
			return
		}
	}
	lease.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1.SchemeGroupVersion.String(), Kind: "Node", Name: m.cfg.NodeName, UID: uid,
	}}
}
