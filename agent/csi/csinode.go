package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/csi/registration"
)

// NodeIDAnnotation is the Node annotation in which the kubelet records, as
// a JSON object, each registered CSI driver's node ID.
const NodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"

// Back-off of the CSINode sync after a failed API call.
const (
	syncRetryInitial = 500 * time.Millisecond
	syncRetryMax     = 30 * time.Second
)

// syncCSINodeLoop keeps the CSINode object and the Node in step with the
// registry, from its first scan on, until ctx ends.
func (m *Manager) syncCSINodeLoop(ctx context.Context) {
	select {
	case <-m.registry.Scanned():
	case <-ctx.Done():
		return
	}
	retry := time.Duration(0)
	for {
		changed := m.registry.Changed()
		var timer *time.Timer
		var wait <-chan time.Time
		if err := m.syncCSINode(ctx, m.registry.Drivers()); err != nil {
			if ctx.Err() != nil {
				return
			}
			retry = min(max(2*retry, syncRetryInitial), syncRetryMax)
			m.cfg.Logger.Warn("updating the CSINode object failed; retrying", "node", m.cfg.NodeName, "err", err, "retryIn", retry)
			timer = time.NewTimer(retry)
			wait = timer.C
		} else {
			retry = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-wait:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// syncCSINode makes the CSINode's spec.drivers the registered drivers (name,
// node ID, topology keys, volume limit), creating the object (owned by the
// Node) if needed, and records the drivers' node IDs in the Node's
// NodeIDAnnotation and their topology segments in its labels, as the
// kubelet's CSI node updater does. Topology labels stay when a driver goes,
// as upstream.
func (m *Manager) syncCSINode(ctx context.Context, drivers []registration.Driver) error {
	node, err := m.cfg.Client.CoreV1().Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", m.cfg.NodeName, err)
	}
	if err := m.updateNode(ctx, node, drivers); err != nil {
		return err
	}
	want := make([]storagev1.CSINodeDriver, 0, len(drivers))
	for _, d := range drivers {
		keys := slices.Sorted(maps.Keys(d.NodeInfo.AccessibleTopology))
		entry := storagev1.CSINodeDriver{Name: d.Name, NodeID: d.NodeInfo.NodeID, TopologyKeys: keys}
		if n := d.NodeInfo.MaxVolumesPerNode; n > 0 {
			count := int32(min(n, int64(^uint32(0)>>1)))
			entry.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
		}
		want = append(want, entry)
	}
	csiNodes := m.cfg.Client.StorageV1().CSINodes()
	cur, err := csiNodes.Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{
				Name: m.cfg.NodeName,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
				}},
			},
			Spec: storagev1.CSINodeSpec{Drivers: want},
		}
		if _, err := csiNodes.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create CSINode %s: %w", m.cfg.NodeName, err)
		}
		m.cfg.Logger.Info("created the CSINode object", "node", m.cfg.NodeName, "drivers", driverNames(want))
		return nil
	}
	if err != nil {
		return fmt.Errorf("get CSINode %s: %w", m.cfg.NodeName, err)
	}
	if sameDrivers(cur.Spec.Drivers, want) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Spec.Drivers = want
	if _, err := csiNodes.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update CSINode %s: %w", m.cfg.NodeName, err)
	}
	m.cfg.Logger.Info("updated the CSINode object", "node", m.cfg.NodeName, "drivers", driverNames(want))
	return nil
}

// updateNode patches the Node's NodeIDAnnotation and topology labels when
// they differ from the registered drivers'.
func (m *Manager) updateNode(ctx context.Context, node *v1.Node, drivers []registration.Driver) error {
	ids := map[string]string{}
	labels := map[string]any{}
	for _, d := range drivers {
		ids[d.Name] = d.NodeInfo.NodeID
		for k, v := range d.NodeInfo.AccessibleTopology {
			if node.Labels[k] != v {
				labels[k] = v
			}
		}
	}
	var curIDs map[string]string
	if s := node.Annotations[NodeIDAnnotation]; s != "" {
		_ = json.Unmarshal([]byte(s), &curIDs) // unreadable: rewritten
	}
	meta := map[string]any{}
	if !maps.Equal(ids, curIDs) {
		if len(ids) == 0 {
			meta["annotations"] = map[string]any{NodeIDAnnotation: nil}
		} else {
			data, err := json.Marshal(ids)
			if err != nil {
				return err
			}
			meta["annotations"] = map[string]any{NodeIDAnnotation: string(data)}
		}
	}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(meta) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	if _, err := m.cfg.Client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch node %s with the CSI drivers' node IDs and topology: %w", node.Name, err)
	}
	return nil
}

func sameDrivers(a, b []storagev1.CSINodeDriver) bool {
	return slices.EqualFunc(a, b, func(x, y storagev1.CSINodeDriver) bool {
		if x.Name != y.Name || x.NodeID != y.NodeID || !slices.Equal(x.TopologyKeys, y.TopologyKeys) {
			return false
		}
		xc, yc := allocatableCount(x), allocatableCount(y)
		return (xc == nil) == (yc == nil) && (xc == nil || *xc == *yc)
	})
}

func allocatableCount(d storagev1.CSINodeDriver) *int32 {
	if d.Allocatable == nil {
		return nil
	}
	return d.Allocatable.Count
}

func driverNames(ds []storagev1.CSINodeDriver) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}
