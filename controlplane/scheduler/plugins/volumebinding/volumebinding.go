// Package volumebinding is the VolumeBinding plugin: a pod's
// PersistentVolumeClaims (and the claims of its generic ephemeral volumes)
// decide where it may run, and for WaitForFirstConsumer claims the chosen
// node decides where their volumes come from.
//
//   - PreFilter: a missing claim, a claim of another pod's ephemeral volume,
//     or an unbound claim of an Immediate class makes the pod unschedulable
//     everywhere (upstream's messages).
//   - Filter: a bound claim's volume node affinity must match the node; an
//     unbound WaitForFirstConsumer claim needs on the node either a matching
//     Available static volume, or a class that can provision there (its
//     allowedTopologies match the node, the CSI driver is registered on the
//     node's CSINode, no other node already selected).
//   - PreBind: static matches are bound (the volume's claimRef set; the
//     persistent volume binder completes it), claims to provision get the
//     volume.kubernetes.io/selected-node annotation, and the pod is bound
//     only once every claim is Bound.
package volumebinding

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/util/retry"
	storageephemeral "k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	fw "berth/controlplane/scheduler/framework"
	"berth/internal/errdefs"
)

// Name is the plugin's name.
const Name = "VolumeBinding"

// Reasons, as upstream's.
const (
	ErrReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
	ErrReasonBoundToMissingPV = "pvc(s) bound to non-existent pv(s)"
	ErrReasonNodeConflict     = "node(s) had volume node affinity conflict"
	ErrReasonBindConflict     = "node(s) didn't find available persistent volumes to bind"
)

// Defaults for Config.
const (
	DefaultBindTimeout  = 600 * time.Second
	DefaultPollInterval = 100 * time.Millisecond
)

// Config gives the plugin its view of the cluster.
type Config struct {
	// Claims, Volumes, Classes, CSINodes and Nodes are listers of the
	// scheduler's informers; required.
	Claims   corelisters.PersistentVolumeClaimLister
	Volumes  corelisters.PersistentVolumeLister
	Classes  storagelisters.StorageClassLister
	CSINodes storagelisters.CSINodeLister
	Nodes    corelisters.NodeLister
	// Client writes claims and volumes in PreBind; required.
	Client kubernetes.Interface
	// BindTimeout bounds PreBind's wait for the claims to be bound
	// (default 600s, upstream's bindTimeoutSeconds).
	BindTimeout time.Duration
	// PollInterval is how often PreBind checks the claims (default 100ms).
	PollInterval time.Duration
}

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	if c.Claims == nil || c.Volumes == nil || c.Classes == nil || c.CSINodes == nil || c.Nodes == nil || c.Client == nil {
		return fmt.Errorf("volumebinding config: Claims, Volumes, Classes, CSINodes, Nodes and Client are required: %w", errdefs.ErrInvalidArgument)
	}
	if c.BindTimeout < 0 || c.PollInterval < 0 {
		return fmt.Errorf("volumebinding config: BindTimeout and PollInterval must not be negative: %w", errdefs.ErrInvalidArgument)
	}
	if c.BindTimeout == 0 {
		c.BindTimeout = DefaultBindTimeout
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	return nil
}

// Plugin is the VolumeBinding plugin.
type Plugin struct {
	cfg Config
}

var (
	_ fw.PreFilterPlugin = (*Plugin)(nil)
	_ fw.FilterPlugin    = (*Plugin)(nil)
	_ fw.PreBindPlugin   = (*Plugin)(nil)
)

// New validates cfg and returns the plugin.
func New(cfg Config) (*Plugin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Plugin{cfg: cfg}, nil
}

// Name returns Name.
func (*Plugin) Name() string { return Name }

// podVolumes is what PreFilter learns about the pod's claims.
type podVolumes struct {
	// bound are the volumes of the bound claims.
	bound []*v1.PersistentVolume
	// delayed are the unbound WaitForFirstConsumer claims.
	delayed []*v1.PersistentVolumeClaim
}

// claims returns the pod's claims, or a status rejecting the pod.
func (p *Plugin) claims(pod *v1.Pod) ([]*v1.PersistentVolumeClaim, *fw.Status) {
	var out []*v1.PersistentVolumeClaim
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		var name string
		switch {
		case vol.PersistentVolumeClaim != nil:
			name = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			name = storageephemeral.VolumeClaimName(pod, vol)
		default:
			continue
		}
		claim, err := p.cfg.Claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil, fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		}
		if err != nil {
			return nil, fw.AsStatus(err)
		}
		if claim.DeletionTimestamp != nil {
			return nil, fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if vol.Ephemeral != nil {
			if err := storageephemeral.VolumeIsForPod(pod, claim); err != nil {
				return nil, fw.NewStatus(fw.UnschedulableAndUnresolvable, err.Error())
			}
		}
		out = append(out, claim)
	}
	return out, nil
}

func (p *Plugin) delayed(claim *v1.PersistentVolumeClaim) (bool, error) {
	cn := storagehelpers.GetPersistentVolumeClaimClass(claim)
	if cn == "" {
		return false, nil
	}
	class, err := p.cfg.Classes.Get(cn)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer, nil
}

// PreFilter sorts the pod's claims into bound and delayed ones; Skip for a
// pod without claims.
func (p *Plugin) PreFilter(state *fw.CycleState, pi *fw.PodInfo, _ *fw.Snapshot) *fw.Status {
	claims, st := p.claims(pi.Pod)
	if st != nil {
		return st
	}
	if len(claims) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	pv := &podVolumes{}
	for _, claim := range claims {
		if claim.Spec.VolumeName != "" {
			vol, err := p.cfg.Volumes.Get(claim.Spec.VolumeName)
			if apierrors.IsNotFound(err) {
				return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonBoundToMissingPV)
			}
			if err != nil {
				return fw.AsStatus(err)
			}
			pv.bound = append(pv.bound, vol)
			continue
		}
		delay, err := p.delayed(claim)
		if err != nil {
			return fw.AsStatus(err)
		}
		if !delay {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
		}
		pv.delayed = append(pv.delayed, claim)
	}
	state.Write(Name, pv)
	return nil
}

// Filter checks the node against the pod's volumes.
func (p *Plugin) Filter(state *fw.CycleState, pi *fw.PodInfo, ni *fw.NodeInfo) *fw.Status {
	pv, _ := state.Read(Name).(*podVolumes)
	if pv == nil {
		return nil
	}
	node := ni.Node
	for _, vol := range pv.bound {
		if storagehelpers.CheckNodeAffinity(vol, node.Labels) != nil {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonNodeConflict)
		}
	}
	if len(pv.delayed) == 0 {
		return nil
	}
	_, ok, err := p.plan(pv.delayed, node)
	if err != nil {
		return fw.AsStatus(err)
	}
	if !ok {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonBindConflict)
	}
	return nil
}

// bindings is where each delayed claim's volume comes from on a node.
type bindings struct {
	static    map[string]*v1.PersistentVolume // claim name → volume to bind
	provision []*v1.PersistentVolumeClaim
}

// plan finds, for each delayed claim, a static volume on node (each used
// once) or a class that can provision there; ok is false when some claim
// has neither.
func (p *Plugin) plan(claims []*v1.PersistentVolumeClaim, node *v1.Node) (bindings, bool, error) {
	b := bindings{static: map[string]*v1.PersistentVolume{}}
	all, err := p.cfg.Volumes.List(labels.Everything())
	if err != nil {
		return b, false, err
	}
	excluded := map[string]*v1.PersistentVolume{}
	for _, claim := range claims {
		vol, err := storagehelpers.FindMatchingVolume(claim, all, node, excluded, true, false)
		if err != nil {
			return b, false, err
		}
		if vol != nil {
			excluded[vol.Name] = vol
			b.static[claim.Name] = vol
			continue
		}
		ok, err := p.canProvision(claim, node)
		if err != nil || !ok {
			return b, false, err
		}
		b.provision = append(b.provision, claim)
	}
	return b, true, nil
}

// canProvision reports whether the claim's class could provision a volume
// for node.
func (p *Plugin) canProvision(claim *v1.PersistentVolumeClaim, node *v1.Node) (bool, error) {
	if sel, ok := claim.Annotations[storagehelpers.AnnSelectedNode]; ok && sel != node.Name {
		return false, nil
	}
	class, err := p.cfg.Classes.Get(storagehelpers.GetPersistentVolumeClaimClass(claim))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if class.Provisioner == storagehelpers.NotSupportedProvisioner {
		return false, nil
	}
	if len(class.AllowedTopologies) > 0 && !MatchTopology(class.AllowedTopologies, node.Labels) {
		return false, nil
	}
	return p.driverOnNode(class.Provisioner, node.Name)
}

// driverOnNode: when the provisioner is a CSI driver registered on some
// node's CSINode, the node must have it registered too (a driver absent
// from every CSINode, e.g. not a CSI driver, is not checked).
func (p *Plugin) driverOnNode(driver, node string) (bool, error) {
	has := func(cn *storagev1.CSINode) bool {
		return slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver })
	}
	if cn, err := p.cfg.CSINodes.Get(node); err == nil && has(cn) {
		return true, nil
	} else if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	all, err := p.cfg.CSINodes.List(labels.Everything())
	if err != nil {
		return false, err
	}
	return !slices.ContainsFunc(all, has), nil
}

// MatchTopology reports whether node labels satisfy any of the terms (each
// term's requirements all hold: the label's value is one of the values).
func MatchTopology(terms []v1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	for _, t := range terms {
		ok := true
		for _, r := range t.MatchLabelExpressions {
			v, has := nodeLabels[r.Key]
			if !has || !slices.Contains(r.Values, v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// PreBind binds the pod's delayed claims for nodeName (static volumes get
// the claimRef, the others the selected-node annotation) and waits until
// every claim of the pod is Bound.
func (p *Plugin) PreBind(ctx context.Context, pod *v1.Pod, nodeName string) *fw.Status {
	claims, st := p.claims(pod)
	if st != nil {
		return st
	}
	if len(claims) == 0 {
		return nil
	}
	var delayed []*v1.PersistentVolumeClaim
	for _, c := range claims {
		if c.Spec.VolumeName == "" {
			delayed = append(delayed, c)
		}
	}
	if len(delayed) > 0 {
		node, err := p.cfg.Nodes.Get(nodeName)
		if err != nil {
			return fw.AsStatus(fmt.Errorf("node %q: %w", nodeName, err))
		}
		b, ok, err := p.plan(delayed, node)
		if err != nil {
			return fw.AsStatus(err)
		}
		if !ok {
			return fw.NewStatus(fw.Unschedulable, ErrReasonBindConflict)
		}
		for _, claim := range delayed {
			if vol, ok := b.static[claim.Name]; ok {
				err = p.bindStatic(ctx, vol, claim)
			} else {
				err = p.selectNode(ctx, claim, nodeName)
			}
			if err != nil {
				return fw.AsStatus(err)
			}
		}
	}
	names := make([]string, len(claims))
	for i, c := range claims {
		names[i] = c.Name
	}
	err := wait.PollUntilContextTimeout(ctx, p.cfg.PollInterval, p.cfg.BindTimeout, true, func(context.Context) (bool, error) {
		return p.allBound(pod.Namespace, names, nodeName)
	})
	if err != nil {
		return fw.AsStatus(fmt.Errorf("binding volumes: %w", err))
	}
	return nil
}

func (p *Plugin) bindStatic(ctx context.Context, vol *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) error {
	bound, dirty, err := storagehelpers.GetBindVolumeToClaim(vol, claim)
	if err != nil || !dirty {
		return err
	}
	if _, err := p.cfg.Client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("bind volume %s to claim %s/%s: %w", vol.Name, claim.Namespace, claim.Name, err)
	}
	return nil
}

// selectNode sets the claim's selected-node annotation, re-reading the
// claim when a concurrent write (the binder's status update) conflicts.
func (p *Plugin) selectNode(ctx context.Context, claim *v1.PersistentVolumeClaim, node string) error {
	claims := p.cfg.Client.CoreV1().PersistentVolumeClaims(claim.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if claim.Annotations[storagehelpers.AnnSelectedNode] == node || claim.Spec.VolumeName != "" {
			return nil
		}
		want := claim.DeepCopy()
		metav1.SetMetaDataAnnotation(&want.ObjectMeta, storagehelpers.AnnSelectedNode, node)
		_, err := claims.Update(ctx, want, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			cur, gerr := claims.Get(ctx, claim.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			if cur.UID != claim.UID {
				return fmt.Errorf("claim was replaced: %w", errdefs.ErrConflict)
			}
			claim = cur
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("claim %s/%s: select node %s: %w", claim.Namespace, claim.Name, node, err)
	}
	return nil
}

// allBound reports whether every named claim is fully bound (its volume set
// and the binder's bind-completed annotation); a claim whose selected node
// changed away from node fails the wait.
func (p *Plugin) allBound(ns string, names []string, node string) (bool, error) {
	for _, n := range names {
		claim, err := p.cfg.Claims.PersistentVolumeClaims(ns).Get(n)
		if err != nil {
			return false, fmt.Errorf("claim %s/%s: %w", ns, n, err)
		}
		if sel, ok := claim.Annotations[storagehelpers.AnnSelectedNode]; ok && sel != node && claim.Spec.VolumeName == "" {
			return false, fmt.Errorf("claim %s/%s: selected node changed to %q: %w", ns, n, sel, errdefs.ErrConflict)
		}
		if claim.Spec.VolumeName == "" || !metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted) {
			return false, nil
		}
	}
	return true, nil
}
