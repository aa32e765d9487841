package pv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"berth/csi/driver"
	"berth/integration/harness"
)

const (
	driverName = driver.DefaultDriverName
	node       = "node-a"
	otherNode  = "node-b"
	timeout    = 60 * time.Second
)

var topologyKey = driver.TopologyKey(driverName)

// env is the package's cluster: the server, the csi-local process of
// node-a and its root dir.
type env struct {
	c       *harness.Cluster
	client  kubernetes.Interface
	csiRoot string
}

func TestPersistentVolumes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the persistent volume integration tests")
	}
	// The fake nodes send no heartbeats: keep the node lifecycle
	// controller from tainting them while the tests run.
	c := harness.StartServer(t, harness.ServerOptions{ClusterCIDR: "10.244.0.0/16", MaskBits: 24,
		Args: []string{"--node-monitor-grace-period", "1h", "--node-startup-grace-period", "1h"}})
	dir := t.TempDir()
	e := &env{c: c, client: c.Client, csiRoot: filepath.Join(dir, "csi")}
	csi := harness.Start(t, "berth csi-local", "csi-local", "--endpoint", "unix://"+filepath.Join(dir, "csi.sock"),
		"--root-dir", e.csiRoot, "--node-id", node, "--kubeconfig", c.Kubeconfig())
	harness.WaitFor(t, timeout, "csi-local's provisioner to start", func() (bool, string) {
		if csi.Exited() {
			t.Fatalf("csi-local exited:\n%s", csi.Log())
		}
		return strings.Contains(csi.Log(), "provisioner started"), "no 'provisioner started' in its log"
	})
	e.fakeNode(t, node, true)
	e.fakeNode(t, otherNode, false) // csi-local is not registered there
	t.Run("StaticBinding", e.testStaticBinding)
	t.Run("ImmediateProvisioningAndDelete", e.testImmediateDelete)
	t.Run("RetainKeepsVolume", e.testRetain)
	t.Run("WaitForFirstConsumer", e.testWaitForFirstConsumer)
	t.Run("WaitForFirstConsumerStaticVolume", e.testWaitForFirstConsumerStatic)
	t.Run("UnschedulableClaims", e.testUnschedulable)
	t.Run("DefaultStorageClass", e.testDefaultStorageClass)
	t.Run("StorageObjectInUseProtection", e.testStorageProtection)
}

// testDefaultStorageClass: a claim naming no class gets the class marked
// default at admission; one asking for "" keeps no class.
func (e *env) testDefaultStorageClass(t *testing.T) {
	e.createClass(t, &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "the-default", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "static.example.com",
	})
	// Admission reads classes from its informer: wait until it has the new
	// one, through dry runs that store nothing.
	harness.WaitFor(t, timeout, "admission to see the default class", func() (bool, string) {
		out, err := e.client.CoreV1().PersistentVolumeClaims("default").Create(ctx(t), claim("dry", "1Mi", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		return out.Spec.StorageClassName != nil, "no class set yet"
	})
	got := e.createClaim(t, claim("defaulted", "1Mi", nil))
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != "the-default" {
		t.Fatalf("a claim naming no class has storageClassName %v, want the-default", got.Spec.StorageClassName)
	}
	none := e.createClaim(t, claim("no-class", "1Mi", ptr("")))
	if none.Spec.StorageClassName == nil || *none.Spec.StorageClassName != "" {
		t.Fatalf("a claim asking for no class has storageClassName %v, want \"\"", none.Spec.StorageClassName)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return c
}

func staticPV(name, size string, class string, policy corev1.PersistentVolumeReclaimPolicy, labels map[string]string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "static.example.com", VolumeHandle: name,
			}},
		},
	}
}

func claim(name, size string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

func (e *env) createPV(t *testing.T, pv *corev1.PersistentVolume) {
	t.Helper()
	if _, err := e.client.CoreV1().PersistentVolumes().Create(ctx(t), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
}

func (e *env) createClaim(t *testing.T, c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	t.Helper()
	out, err := e.client.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx(t), c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumeClaims(c.Namespace).Delete(context.Background(), c.Name, metav1.DeleteOptions{})
	})
	return out
}

func (e *env) createClass(t *testing.T, sc *storagev1.StorageClass) {
	t.Helper()
	if _, err := e.client.StorageV1().StorageClasses().Create(ctx(t), sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
	})
}

// waitClaim waits until the claim satisfies cond and returns it.
func (e *env) waitClaim(t *testing.T, name, what string, cond func(*corev1.PersistentVolumeClaim) bool) *corev1.PersistentVolumeClaim {
	t.Helper()
	var got *corev1.PersistentVolumeClaim
	harness.WaitFor(t, timeout, "claim "+name+" "+what, func() (bool, string) {
		c, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = c
		return cond(c), fmt.Sprintf("phase %s volume %q annotations %v", c.Status.Phase, c.Spec.VolumeName, c.Annotations)
	})
	return got
}

// waitVolume waits until the named volume satisfies cond (nil: it is gone).
func (e *env) waitVolume(t *testing.T, name, what string, cond func(*corev1.PersistentVolume) bool) *corev1.PersistentVolume {
	t.Helper()
	var got *corev1.PersistentVolume
	harness.WaitFor(t, timeout, "volume "+name+" "+what, func() (bool, string) {
		v, err := e.client.CoreV1().PersistentVolumes().Get(ctx(t), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return cond(nil), "not found"
		}
		if err != nil {
			return false, err.Error()
		}
		got = v
		return cond(v), fmt.Sprintf("phase %s claimRef %v", v.Status.Phase, v.Spec.ClaimRef)
	})
	return got
}

func bound(c *corev1.PersistentVolumeClaim) bool {
	return c.Status.Phase == corev1.ClaimBound && c.Spec.VolumeName != ""
}

// waitEvent waits for an event with reason on the object and returns its message.
func (e *env) waitEvent(t *testing.T, ns, kind, name, reason string) string {
	t.Helper()
	var msg string
	harness.WaitFor(t, timeout, fmt.Sprintf("a %s event on %s %s", reason, kind, name), func() (bool, string) {
		list, err := e.client.CoreV1().Events(ns).List(ctx(t), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
				if ev.Reason == reason {
					msg = ev.Message
					return true, ""
				}
				seen = append(seen, ev.Reason)
			}
		}
		return false, fmt.Sprintf("reasons seen: %v", seen)
	})
	return msg
}

func (e *env) testStaticBinding(t *testing.T) {
	e.createPV(t, staticPV("static-small", "1Gi", "", corev1.PersistentVolumeReclaimRetain, nil))
	e.createPV(t, staticPV("static-big", "10Gi", "", corev1.PersistentVolumeReclaimRetain, nil))
	e.createPV(t, staticPV("static-gold", "5Gi", "", corev1.PersistentVolumeReclaimRetain, map[string]string{"tier": "gold"}))
	e.waitVolume(t, "static-small", "Available", func(v *corev1.PersistentVolume) bool { return v != nil && v.Status.Phase == corev1.VolumeAvailable })

	// The smallest volume that fits.
	e.createClaim(t, claim("small", "500Mi", ptr("")))
	c := e.waitClaim(t, "small", "bound", bound)
	if c.Spec.VolumeName != "static-small" {
		t.Errorf("claim bound to %s, want the smallest fit static-small", c.Spec.VolumeName)
	}
	if q := c.Status.Capacity[corev1.ResourceStorage]; q.String() != "1Gi" || len(c.Status.AccessModes) != 1 {
		t.Errorf("claim status capacity %s modes %v, want the volume's 1Gi RWO", q.String(), c.Status.AccessModes)
	}
	if c.Annotations[storagehelpers.AnnBindCompleted] != "yes" || c.Annotations[storagehelpers.AnnBoundByController] != "yes" {
		t.Errorf("claim annotations %v", c.Annotations)
	}
	v := e.waitVolume(t, "static-small", "Bound", func(v *corev1.PersistentVolume) bool { return v != nil && v.Status.Phase == corev1.VolumeBound })
	if v.Spec.ClaimRef == nil || v.Spec.ClaimRef.Name != "small" || v.Spec.ClaimRef.UID != c.UID || v.Annotations[storagehelpers.AnnBoundByController] != "yes" {
		t.Errorf("volume claimRef %+v annotations %v", v.Spec.ClaimRef, v.Annotations)
	}

	// A selector picks the labelled volume though a smaller one fits.
	sel := claim("gold", "1Gi", ptr(""))
	sel.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
	e.createClaim(t, sel)
	if c := e.waitClaim(t, "gold", "bound", bound); c.Spec.VolumeName != "static-gold" {
		t.Errorf("selector claim bound to %s, want static-gold", c.Spec.VolumeName)
	}

	// Pre-binding from the volume's side: the claim named by the claimRef
	// gets it.
	pre := staticPV("static-prebound", "20Gi", "", corev1.PersistentVolumeReclaimRetain, nil)
	pre.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "wants-prebound"}
	e.createPV(t, pre)
	e.createClaim(t, claim("wants-prebound", "1Gi", ptr("")))
	if c := e.waitClaim(t, "wants-prebound", "bound", bound); c.Spec.VolumeName != "static-prebound" {
		t.Errorf("claim bound to %s, want the volume pre-bound to it", c.Spec.VolumeName)
	}

	// Pre-binding from the claim's side: volumeName.
	named := claim("names-big", "1Gi", ptr(""))
	named.Spec.VolumeName = "static-big"
	e.createClaim(t, named)
	if c := e.waitClaim(t, "names-big", "bound", bound); c.Annotations[storagehelpers.AnnBoundByController] != "" {
		t.Errorf("a claim the user bound got %s", storagehelpers.AnnBoundByController)
	}

	// Nothing fits and no class: Pending with upstream's event.
	e.createClaim(t, claim("huge", "100Gi", ptr("")))
	if msg := e.waitEvent(t, "default", "PersistentVolumeClaim", "huge", "FailedBinding"); msg != "no persistent volumes available for this claim and no storage class is set" {
		t.Errorf("FailedBinding message %q", msg)
	}
	if c, _ := e.client.CoreV1().PersistentVolumeClaims("default").Get(ctx(t), "huge", metav1.GetOptions{}); c.Status.Phase != corev1.ClaimPending {
		t.Errorf("unbindable claim phase %s, want Pending", c.Status.Phase)
	}

	// Retain: the claim deleted, its volume is Released and stays.
	if err := e.client.CoreV1().PersistentVolumeClaims("default").Delete(ctx(t), "small", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitVolume(t, "static-small", "Released", func(v *corev1.PersistentVolume) bool { return v != nil && v.Status.Phase == corev1.VolumeReleased })

	// Delete on a volume no provisioner made: Failed, as berth has no
	// in-tree deleter.
	del := staticPV("static-delete", "1Gi", "manual", corev1.PersistentVolumeReclaimDelete, nil)
	e.createPV(t, del)
	e.createClaim(t, claim("to-delete", "1Gi", ptr("manual")))
	e.waitClaim(t, "to-delete", "bound", bound)
	if err := e.client.CoreV1().PersistentVolumeClaims("default").Delete(ctx(t), "to-delete", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	v = e.waitVolume(t, "static-delete", "Failed", func(v *corev1.PersistentVolume) bool { return v != nil && v.Status.Phase == corev1.VolumeFailed })
	if !strings.Contains(v.Status.Message, "no deletable volume plugin matched") {
		t.Errorf("Failed volume message %q", v.Status.Message)
	}
}

// volumeDir is where csi-local keeps a directory volume.
func (e *env) volumeDir(handle string) string { return filepath.Join(e.csiRoot, "volumes", handle) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (e *env) testImmediateDelete(t *testing.T) {
	e.createClass(t, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "local-delete"}, Provisioner: driverName,
		ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr(storagev1.VolumeBindingImmediate),
	})
	created := e.createClaim(t, claim("dyn", "64Mi", ptr("local-delete")))
	c := e.waitClaim(t, "dyn", "bound", bound)
	if c.Annotations[storagehelpers.AnnStorageProvisioner] != driverName || c.Annotations[storagehelpers.AnnBetaStorageProvisioner] != driverName {
		t.Errorf("claim provisioner annotations %v", c.Annotations)
	}
	if c.Annotations[storagehelpers.AnnSelectedNode] != node {
		t.Errorf("an Immediate claim csi-local provisioned should name its node %s in %s: %v", node, storagehelpers.AnnSelectedNode, c.Annotations)
	}
	want := "pvc-" + string(created.UID)
	if c.Spec.VolumeName != want {
		t.Fatalf("claim bound to %s, want %s", c.Spec.VolumeName, want)
	}
	if msg := e.waitEvent(t, "default", "PersistentVolumeClaim", "dyn", "ProvisioningSucceeded"); !strings.Contains(msg, want) {
		t.Errorf("ProvisioningSucceeded message %q", msg)
	}
	pv := e.waitVolume(t, want, "Bound", func(v *corev1.PersistentVolume) bool { return v != nil && v.Status.Phase == corev1.VolumeBound })
	src := pv.Spec.CSI
	if src == nil || src.Driver != driverName || src.VolumeHandle == "" {
		t.Fatalf("volume source %+v", pv.Spec.PersistentVolumeSource)
	}
	if pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != driverName || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.StorageClassName != "local-delete" {
		t.Errorf("volume %+v %+v", pv.Annotations, pv.Spec)
	}
	if err := storagehelpers.CheckNodeAffinity(pv, map[string]string{topologyKey: node}); err != nil {
		t.Errorf("volume node affinity does not select %s: %v", node, err)
	}
	if err := storagehelpers.CheckNodeAffinity(pv, map[string]string{topologyKey: otherNode}); err == nil {
		t.Errorf("volume node affinity admits %s too", otherNode)
	}
	dir := e.volumeDir(src.VolumeHandle)
	if !exists(dir) {
		t.Fatalf("volume dir %s missing", dir)
	}

	// Delete: the claim goes, then the volume's data and the PV.
	if err := e.client.CoreV1().PersistentVolumeClaims("default").Delete(ctx(t), "dyn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitVolume(t, want, "deleted", func(v *corev1.PersistentVolume) bool { return v == nil })
	if exists(dir) {
		t.Errorf("volume dir %s still exists after the PV was deleted", dir)
	}
}

func (e *env) testRetain(t *testing.T) {
	e.createClass(t, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "local-retain"}, Provisioner: driverName,
		ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimRetain), VolumeBindingMode: ptr(storagev1.VolumeBindingImmediate),
	})
	e.createClaim(t, claim("kept", "32Mi", ptr("local-retain")))
	c := e.waitClaim(t, "kept", "bound", bound)
	pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx(t), c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	dir := e.volumeDir(pv.Spec.CSI.VolumeHandle)
	if err := e.client.CoreV1().PersistentVolumeClaims("default").Delete(ctx(t), "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitVolume(t, pv.Name, "Released", func(v *corev1.PersistentVolume) bool { return v != nil && v.Status.Phase == corev1.VolumeReleased })
	// The provisioner has seen the Released volume by the time a later
	// change to it reaches the provisioner too; a Retain volume stays.
	v, err := e.client.CoreV1().PersistentVolumes().Get(ctx(t), pv.Name, metav1.GetOptions{})
	if err != nil || v.Status.Phase != corev1.VolumeReleased || v.Spec.ClaimRef == nil || v.Spec.ClaimRef.Name != "kept" {
		t.Fatalf("retained volume: %v %+v", err, v)
	}
	if !exists(dir) {
		t.Errorf("retained volume's dir %s was removed", dir)
	}
}

// fakeNode creates a Ready node the scheduler can place pods on; with
// csiLocal it is labelled with csi-local's topology key and its CSINode
// lists the driver, as the agent does when csi-local registers.
func (e *env) fakeNode(t *testing.T, name string, csiLocal bool) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	if csiLocal {
		n.Labels[topologyKey] = name
	}
	created, err := e.client.CoreV1().Nodes().Create(ctx(t), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	// nodeipam writes the node too: retry on conflicts.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := e.client.CoreV1().Nodes().Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = corev1.NodeStatus{
			Capacity: res, Allocatable: res,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		_, err = e.client.CoreV1().Nodes().UpdateStatus(ctx(t), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if csiLocal {
		cn := &storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: created.UID}}},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
				Name: driverName, NodeID: name, TopologyKeys: []string{topologyKey},
			}}},
		}
		if _, err := e.client.StorageV1().CSINodes().Create(ctx(t), cn, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.client.StorageV1().CSINodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

func (e *env) createPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pod.Namespace = "default"
	pod.Spec.AutomountServiceAccountToken = ptr(false)
	pod.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	if _, err := e.client.CoreV1().Pods("default").Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)})
	})
}

func (e *env) testWaitForFirstConsumer(t *testing.T) {
	e.createClass(t, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "local-wffc"}, Provisioner: driverName,
		ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr(storagev1.VolumeBindingWaitForFirstConsumer),
	})
	e.createClaim(t, claim("later", "16Mi", ptr("local-wffc")))
	if msg := e.waitEvent(t, "default", "PersistentVolumeClaim", "later", "WaitForFirstConsumer"); msg != "waiting for first consumer to be created before binding" {
		t.Errorf("WaitForFirstConsumer message %q", msg)
	}
	// No consumer, no volume: the claim is Pending, unannotated, and no PV
	// was made for it.
	c, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(ctx(t), "later", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.Phase != corev1.ClaimPending || c.Annotations[storagehelpers.AnnSelectedNode] != "" || c.Annotations[storagehelpers.AnnStorageProvisioner] != "" {
		t.Errorf("unconsumed claim: phase %s annotations %v", c.Status.Phase, c.Annotations)
	}
	if _, err := e.client.CoreV1().PersistentVolumes().Get(ctx(t), "pvc-"+string(c.UID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a volume exists before any consumer: %v", err)
	}

	// A pod using it, and a generic ephemeral volume of the same class.
	e.createPod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "consumer"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "later"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: claim("", "8Mi", ptr("local-wffc")).Spec,
			}}}},
		}},
	})
	var pod *corev1.Pod
	harness.WaitFor(t, timeout, "pod consumer to be scheduled", func() (bool, string) {
		p, err := e.client.CoreV1().Pods("default").Get(ctx(t), "consumer", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return p.Spec.NodeName != "", fmt.Sprintf("conditions %+v", p.Status.Conditions)
	})
	if pod.Spec.NodeName != node {
		t.Fatalf("pod scheduled to %s, want %s (the only node with csi-local)", pod.Spec.NodeName, node)
	}
	for _, name := range []string{"later", "consumer-scratch"} {
		c := e.waitClaim(t, name, "bound", bound)
		if c.Annotations[storagehelpers.AnnSelectedNode] != node {
			t.Errorf("claim %s selected node %q, want %s", name, c.Annotations[storagehelpers.AnnSelectedNode], node)
		}
		pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx(t), c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Key != topologyKey || terms[0].MatchExpressions[0].Values[0] != node {
			t.Errorf("volume %s node affinity %+v, want %s=%s", pv.Name, pv.Spec.NodeAffinity, topologyKey, node)
		}
		if !exists(e.volumeDir(pv.Spec.CSI.VolumeHandle)) {
			t.Errorf("volume %s has no dir under csi-local's root", pv.Name)
		}
	}
	// The ephemeral claim belongs to the pod.
	eph, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(ctx(t), "consumer-scratch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(eph); ref == nil || ref.Kind != "Pod" || ref.UID != pod.UID {
		t.Fatalf("ephemeral claim owner %+v, want the pod", ref)
	}
	// The pod goes: the garbage collector deletes its ephemeral claim, and
	// the provisioner the claim's volume (reclaimPolicy Delete).
	if err := e.client.CoreV1().Pods("default").Delete(ctx(t), "consumer", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, timeout, "the ephemeral claim to go with its pod", func() (bool, string) {
		_, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(ctx(t), "consumer-scratch", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	e.waitVolume(t, eph.Spec.VolumeName, "deleted", func(v *corev1.PersistentVolume) bool { return v == nil })
}

// testWaitForFirstConsumerStatic: local static volumes (no provisioner)
// of a WaitForFirstConsumer class; the scheduler picks the node that has a
// fitting one and binds it.
func (e *env) testWaitForFirstConsumerStatic(t *testing.T) {
	e.createClass(t, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "manual-wffc"}, Provisioner: storagehelpers.NotSupportedProvisioner,
		VolumeBindingMode: ptr(storagev1.VolumeBindingWaitForFirstConsumer),
	})
	onNode := func(name, size, host string) *corev1.PersistentVolume {
		v := staticPV(name, size, "manual-wffc", corev1.PersistentVolumeReclaimRetain, nil)
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
		}}}}
		return v
	}
	// Only node-b has a volume large enough.
	e.createPV(t, onNode("local-a", "1Gi", node))
	e.createPV(t, onNode("local-b", "4Gi", otherNode))
	e.waitVolume(t, "local-b", "Available", func(v *corev1.PersistentVolume) bool { return v != nil && v.Status.Phase == corev1.VolumeAvailable })
	e.createClaim(t, claim("local-claim", "2Gi", ptr("manual-wffc")))
	e.waitEvent(t, "default", "PersistentVolumeClaim", "local-claim", "WaitForFirstConsumer")
	if v, err := e.client.CoreV1().PersistentVolumes().Get(ctx(t), "local-b", metav1.GetOptions{}); err != nil || v.Spec.ClaimRef != nil {
		t.Fatalf("the binder bound a WaitForFirstConsumer claim before any consumer: %v %+v", err, v)
	}
	e.createPod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "local-consumer"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "local-claim"},
		}}}},
	})
	harness.WaitFor(t, timeout, "pod local-consumer to be scheduled", func() (bool, string) {
		p, err := e.client.CoreV1().Pods("default").Get(ctx(t), "local-consumer", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName != "", fmt.Sprintf("conditions %+v", p.Status.Conditions)
	})
	p, _ := e.client.CoreV1().Pods("default").Get(ctx(t), "local-consumer", metav1.GetOptions{})
	if p.Spec.NodeName != otherNode {
		t.Errorf("pod on %s, want %s (the node with a fitting volume)", p.Spec.NodeName, otherNode)
	}
	if c := e.waitClaim(t, "local-claim", "bound", bound); c.Spec.VolumeName != "local-b" {
		t.Errorf("claim bound to %s, want local-b", c.Spec.VolumeName)
	}
}

func (e *env) testUnschedulable(t *testing.T) {
	e.createClass(t, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nobody"}, Provisioner: "nobody.example.com",
		VolumeBindingMode: ptr(storagev1.VolumeBindingImmediate),
	})
	e.createClaim(t, claim("never", "1Gi", ptr("nobody")))
	for _, tc := range []struct{ pod, claim, want string }{
		{"missing-claim", "no-such-claim", `persistentvolumeclaim "no-such-claim" not found`},
		{"unbound-immediate", "never", "pod has unbound immediate PersistentVolumeClaims"},
	} {
		e.createPod(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: tc.pod},
			Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: tc.claim},
			}}}},
		})
		harness.WaitFor(t, timeout, "pod "+tc.pod+" to be reported unschedulable", func() (bool, string) {
			p, err := e.client.CoreV1().Pods("default").Get(ctx(t), tc.pod, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					if !strings.Contains(c.Message, tc.want) {
						t.Fatalf("pod %s unschedulable with %q, want %q", tc.pod, c.Message, tc.want)
					}
					return p.Spec.NodeName == "", "scheduled anyway"
				}
			}
			return false, fmt.Sprintf("conditions %+v", p.Status.Conditions)
		})
	}
}
