// Package provisioner does the external-provisioner's job for one CSI
// driver: it watches PersistentVolumeClaims that the persistent volume
// binder annotated for the driver (volume.kubernetes.io/storage-provisioner),
// calls the driver's CreateVolume and creates the PersistentVolume bound to
// the claim; and it calls DeleteVolume and deletes the PersistentVolume when
// a volume it provisioned with reclaimPolicy Delete is Released.
//
// Topology: for a WaitForFirstConsumer claim it waits for the scheduler's
// volume.kubernetes.io/selected-node and requires that node's segment (in
// node mode, the segment the driver's NodeGetInfo reports; otherwise the
// node's labels for the topology keys the driver registered in the node's
// CSINode); without a selected node, the class's allowedTopologies. The
// PV's node affinity is the volume's accessible topology.
//
// Node mode (Config.NodeName set, like the external-provisioner's
// --node-deployment) is for drivers whose volumes live on one node, such as
// berth csi-local: each node's instance provisions only claims whose
// selected node is its own, claims Immediate claims for its node by setting
// selected-node itself (the first writer wins), and deletes only volumes
// whose node affinity matches its own topology.
//
// Running it: `berth csi-local --endpoint unix:///run/csi-local/csi.sock
// --root-dir /var/lib/csi-local --node-id NODE --kubeconfig FILE` serves the
// driver and runs this provisioner (in node mode, for NODE) against that
// socket, as a driver pod with its external-provisioner sidecar would; then a
// StorageClass with provisioner "csi-local.berth.dev" provisions volumes:
//
//	apiVersion: storage.k8s.io/v1
//	kind: StorageClass
//	metadata: {name: local}
//	provisioner: csi-local.berth.dev
//	volumeBindingMode: WaitForFirstConsumer
//	reclaimPolicy: Delete
package provisioner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// Event reasons, as the external-provisioner's.
const (
	ReasonProvisioning          = "Provisioning"
	ReasonProvisioningSucceeded = "ProvisioningSucceeded"
	ReasonProvisioningFailed    = "ProvisioningFailed"
	ReasonVolumeFailedDelete    = "VolumeFailedDelete"
)

// Defaults for Config.
const (
	DefaultWorkers = 4
	DefaultTimeout = time.Minute
)

// Config configures a Provisioner.
type Config struct {
	// Client talks to the apiserver; required.
	Client kubernetes.Interface
	// Conn is a connection to the CSI driver (identity and controller
	// services; node service too in node mode); required.
	Conn grpc.ClientConnInterface
	// DriverName, when set, must equal the driver's GetPluginInfo name;
	// empty takes the driver's.
	DriverName string
	// NodeName switches on node mode: this instance serves only the node
	// of that name (see the package doc).
	NodeName string
	// Recorder records events; nil makes Run record to the apiserver.
	Recorder record.EventRecorder
	// Logger; nil discards.
	Logger *slog.Logger
	// Workers is how many claims and volumes are handled at once (default 4).
	Workers int
	// Timeout bounds each CSI call (default one minute).
	Timeout time.Duration
	// ResyncPeriod is the informers' resync period; 0 disables resyncs.
	ResyncPeriod time.Duration
}

// Validate fills defaults and checks the fields, naming the bad one.
func (c *Config) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("provisioner config: Client is required: %w", errdefs.ErrInvalidArgument)
	}
	if c.Conn == nil {
		return fmt.Errorf("provisioner config: Conn (the CSI driver connection) is required: %w", errdefs.ErrInvalidArgument)
	}
	if c.Workers < 0 || c.Timeout < 0 || c.ResyncPeriod < 0 {
		return fmt.Errorf("provisioner config: Workers, Timeout and ResyncPeriod must not be negative: %w", errdefs.ErrInvalidArgument)
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Provisioner provisions and deletes volumes for one CSI driver.
type Provisioner struct {
	cfg        Config
	log        *slog.Logger
	identity   csi.IdentityClient
	controller csi.ControllerClient
	node       csi.NodeClient
	recorder   record.EventRecorder

	// Known after Run's probe of the driver:
	driver string
	// own is this node's topology segment in node mode.
	own map[string]string

	factory  informers.SharedInformerFactory
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	nodes    corelisters.NodeLister
	csiNodes storagelisters.CSINodeLister
	queue    *controller.Queue
}

// Queue key prefixes.
const (
	claimPrefix  = "claim:"
	volumePrefix = "volume:"
)

// New validates cfg and prepares the informers (started by Run).
func New(cfg Config) (*Provisioner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := informers.NewSharedInformerFactory(cfg.Client, cfg.ResyncPeriod)
	p := &Provisioner{
		cfg: cfg, log: cfg.Logger.With("component", "csi-provisioner"),
		identity: csi.NewIdentityClient(cfg.Conn), controller: csi.NewControllerClient(cfg.Conn), node: csi.NewNodeClient(cfg.Conn),
		recorder: cfg.Recorder, factory: f,
		claims: f.Core().V1().PersistentVolumeClaims().Lister(), volumes: f.Core().V1().PersistentVolumes().Lister(),
		classes: f.Storage().V1().StorageClasses().Lister(), nodes: f.Core().V1().Nodes().Lister(),
		csiNodes: f.Storage().V1().CSINodes().Lister(),
	}
	loop := controller.Config{Client: cfg.Client, Informers: f, Logger: p.log, Workers: cfg.Workers}
	if err := loop.Validate("csi-provisioner", DefaultWorkers); err != nil {
		return nil, err
	}
	p.queue = controller.NewQueue("csi-provisioner", &loop)
	onClaim := func(c *corev1.PersistentVolumeClaim) { p.queue.Add(claimPrefix + c.Namespace + "/" + c.Name) }
	onVolume := func(v *corev1.PersistentVolume) { p.queue.Add(volumePrefix + v.Name) }
	for _, w := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{f.Core().V1().PersistentVolumeClaims().Informer(), controller.On(controller.Added|controller.Updated, onClaim)},
		{f.Core().V1().PersistentVolumes().Informer(), controller.On(controller.Added|controller.Updated, onVolume)},
		{f.Storage().V1().StorageClasses().Informer(), nil},
		{f.Core().V1().Nodes().Informer(), nil},
		{f.Storage().V1().CSINodes().Informer(), nil},
	} {
		if err := p.queue.Watch(w.inf, w.h); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Run probes the driver (waiting for its socket), then provisions and
// deletes volumes until ctx ends. A driver that cannot create and delete
// volumes, or names itself differently than Config.DriverName, is an error.
func (p *Provisioner) Run(ctx context.Context) error {
	if err := p.probe(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	log := p.log.With("driver", p.driver, "node", p.cfg.NodeName)
	p.log = log
	if p.recorder == nil {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.cfg.Client.CoreV1().Events("")})
		defer b.Shutdown()
		component := p.driver
		if p.cfg.NodeName != "" {
			component += "_" + p.cfg.NodeName
		}
		p.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	}
	p.factory.Start(ctx.Done())
	defer p.factory.Shutdown()
	log.Info("provisioner started")
	return p.queue.Run(ctx, p.sync)
}

// probe asks the driver for its name and capabilities (and its node's
// topology in node mode), waiting for the driver to serve.
func (p *Provisioner) probe(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	info, err := p.identity.GetPluginInfo(cctx, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("provisioner: GetPluginInfo: %w", err)
	}
	if p.cfg.DriverName != "" && info.GetName() != p.cfg.DriverName {
		return fmt.Errorf("provisioner: the driver is %q, not %q: %w", info.GetName(), p.cfg.DriverName, errdefs.ErrInvalidArgument)
	}
	p.driver = info.GetName()
	caps, err := p.controller.ControllerGetCapabilities(cctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		return fmt.Errorf("provisioner: ControllerGetCapabilities: %w", err)
	}
	canCreate := false
	for _, c := range caps.GetCapabilities() {
		if c.GetRpc().GetType() == csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME {
			canCreate = true
		}
	}
	if !canCreate {
		return fmt.Errorf("provisioner: driver %s lacks the CREATE_DELETE_VOLUME controller capability: %w", p.driver, errdefs.ErrUnimplemented)
	}
	if p.cfg.NodeName != "" {
		ni, err := p.node.NodeGetInfo(cctx, &csi.NodeGetInfoRequest{})
		if err != nil {
			return fmt.Errorf("provisioner: NodeGetInfo (node mode): %w", err)
		}
		p.own = ni.GetAccessibleTopology().GetSegments()
	}
	return nil
}

// sync handles one queue key: a claim's or a volume's.
func (p *Provisioner) sync(ctx context.Context, key string) error {
	if k, ok := strings.CutPrefix(key, claimPrefix); ok {
		return p.syncClaim(ctx, k)
	}
	if name, ok := strings.CutPrefix(key, volumePrefix); ok {
		return p.syncVolume(ctx, name)
	}
	return nil
}

// errSkip marks a claim this instance leaves to another.
var errSkip = errors.New("not for this provisioner")

// provisionerOf returns the provisioner a claim was annotated for.
func provisionerOf(claim *corev1.PersistentVolumeClaim) string {
	if p := claim.Annotations[storagehelpers.AnnStorageProvisioner]; p != "" {
		return p
	}
	return claim.Annotations[storagehelpers.AnnBetaStorageProvisioner]
}

func (p *Provisioner) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil || provisionerOf(claim) != p.driver {
		return nil
	}
	className := storagehelpers.GetPersistentVolumeClaimClass(claim)
	class, err := p.classes.Get(className)
	if err != nil {
		return fmt.Errorf("claim %s: storage class %q: %w", key, className, err)
	}
	if class.Provisioner != p.driver {
		return nil
	}
	if _, err := p.volumes.Get(VolumeName(claim)); err == nil {
		return nil // provisioned; the binder binds it
	}
	if claim.Spec.Selector != nil {
		p.recorder.Event(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, "claim Selector is not supported")
		return nil
	}
	selected := claim.Annotations[storagehelpers.AnnSelectedNode]
	wffc := class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	if wffc && selected == "" {
		return nil // the scheduler picks the node first
	}
	if p.cfg.NodeName != "" {
		if selected == "" {
			if claim, err = p.claimForNode(ctx, claim, class); err != nil {
				if errors.Is(err, errSkip) {
					return nil
				}
				return err
			}
			selected = p.cfg.NodeName
		} else if selected != p.cfg.NodeName {
			return nil
		}
	}
	topo, err := p.requirement(class, selected)
	if err != nil {
		p.recorder.Event(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, fmt.Sprintf("failed to provision volume with StorageClass %q: %v", class.Name, err))
		return err
	}
	req, err := CreateRequest(claim, class, topo)
	if err != nil {
		p.recorder.Event(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, fmt.Sprintf("failed to provision volume with StorageClass %q: %v", class.Name, err))
		return nil // the claim must change first
	}
	p.recorder.Event(claim, corev1.EventTypeNormal, ReasonProvisioning, fmt.Sprintf("External provisioner is provisioning volume for claim %q", key))
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	resp, err := p.controller.CreateVolume(cctx, req)
	cancel()
	if err != nil {
		p.recorder.Event(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, fmt.Sprintf("failed to provision volume with StorageClass %q: %v", class.Name, err))
		return fmt.Errorf("claim %s: CreateVolume: %w", key, err)
	}
	pv := BuildVolume(claim, class, p.driver, resp.GetVolume())
	if _, err := p.cfg.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		// CreateVolume is idempotent by name: the retry gets the same volume.
		return fmt.Errorf("claim %s: create PersistentVolume %s: %w", key, pv.Name, err)
	}
	p.log.Info("provisioned", "claim", key, "volume", pv.Name, "handle", pv.Spec.CSI.VolumeHandle)
	p.recorder.Event(claim, corev1.EventTypeNormal, ReasonProvisioningSucceeded, fmt.Sprintf("Successfully provisioned volume %s", pv.Name))
	return nil
}

// claimForNode makes an Immediate claim this node's (node mode) by setting
// selected-node to it, when the class's allowedTopologies admit this node;
// a conflict means another node was faster (or the claim changed), and the
// resulting update event brings the claim back.
func (p *Provisioner) claimForNode(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) (*corev1.PersistentVolumeClaim, error) {
	if !Matches(Requirement(class, nil), p.own) {
		return nil, errSkip
	}
	want := claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&want.ObjectMeta, storagehelpers.AnnSelectedNode, p.cfg.NodeName)
	out, err := p.cfg.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, want, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil, errSkip
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: set selected node: %w", claim.Namespace, claim.Name, err)
	}
	return out, nil
}

// requirement computes CreateVolume's accessibility requirements: for a
// selected node, its segment (in node mode for the own node, as the driver
// reported it; otherwise the node's labels for the topology keys the
// driver registered in its CSINode), else the class's allowedTopologies.
func (p *Provisioner) requirement(class *storagev1.StorageClass, selected string) (*csi.TopologyRequirement, error) {
	if selected == "" {
		return Requirement(class, nil), nil
	}
	if selected == p.cfg.NodeName && p.own != nil {
		// This driver's own node: NodeGetInfo told its topology.
		return Requirement(class, p.own), nil
	}
	var keys []string
	if cn, err := p.csiNodes.Get(selected); err == nil {
		for _, d := range cn.Spec.Drivers {
			if d.Name == p.driver {
				keys = d.TopologyKeys
			}
		}
	}
	if keys == nil {
		return nil, fmt.Errorf("selected node %q: driver %s is not registered on it (no topology keys in its CSINode): %w", selected, p.driver, errdefs.ErrUnavailable)
	}
	node, err := p.nodes.Get(selected)
	if err != nil {
		return nil, fmt.Errorf("selected node %q: %w", selected, err)
	}
	seg, err := NodeSegments(node, keys)
	if err != nil {
		return nil, err
	}
	return Requirement(class, seg), nil
}

func (p *Provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != p.driver || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != p.driver ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Status.Phase != corev1.VolumeReleased || pv.DeletionTimestamp != nil {
		return nil
	}
	if p.cfg.NodeName != "" && storagehelpers.CheckNodeAffinity(pv, p.own) != nil {
		return nil // another node's volume
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	_, err = p.controller.DeleteVolume(cctx, &csi.DeleteVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle})
	cancel()
	if err != nil {
		p.recorder.Event(pv, corev1.EventTypeWarning, ReasonVolumeFailedDelete, err.Error())
		return fmt.Errorf("volume %s: DeleteVolume: %w", name, err)
	}
	uid := pv.UID
	err = p.cfg.Client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("volume %s: delete PersistentVolume: %w", name, err)
	}
	p.log.Info("deleted", "volume", name, "handle", pv.Spec.CSI.VolumeHandle)
	return nil
}
