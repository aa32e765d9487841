package volumes_test

// CSI volumes end to end: `berth csi-local` as a process registering with
// the shared agent through <root-dir>/plugins_registry, statically created
// and dynamically provisioned PersistentVolumes, inline ephemeral volumes,
// FailedMount events, volume stats on the agent's /metrics, an agent
// restart with a published volume, and nothing left mounted.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
)

type storageDriver = storagev1.CSINodeDriver

// csiDriverName is csi-local's default driver name.
const csiDriverName = "csi-local.berth.dev"

// csiLocal is a `berth csi-local` process registered with the shared agent.
type csiLocal struct {
	proc     *harness.Proc
	endpoint string // the CSI socket's path
	rootDir  string // the driver's volumes
}

// startCSILocal runs `berth csi-local` for the shared agent's node,
// registering through the agent's plugins_registry (extra: more flags), and
// waits until the node's CSINode lists the driver. Call it before
// newNamespace: cleanups run last first, so the driver outlives the test's
// pods and unpublishes their volumes.
func startCSILocal(t *testing.T, extra ...string) *csiLocal {
	t.Helper()
	c := cluster(t)
	sockDir, err := os.MkdirTemp("", "csi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	d := &csiLocal{endpoint: filepath.Join(sockDir, "csi.sock"), rootDir: filepath.Join(t.TempDir(), "csi-local")}
	args := append([]string{"csi-local", "--endpoint", "unix://" + d.endpoint, "--root-dir", d.rootDir, "--node-id", c.Node,
		"--registration-dir", filepath.Join(c.AgentRootDir, "plugins_registry"), "--log-level", "debug"}, extra...)
	d.proc = harness.Start(t, "berth csi-local", args...)
	waitFor(t, time.Minute, "the CSINode of "+c.Node+" to list "+csiDriverName, func() (bool, string) {
		if d.proc.Exited() {
			t.Fatalf("csi-local exited:\n%s", d.proc.Log())
		}
		n, err := c.Client.StorageV1().CSINodes().Get(context.Background(), c.Node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		i := slices.IndexFunc(n.Spec.Drivers, func(d storageDriver) bool { return d.Name == csiDriverName })
		return i >= 0 && n.Spec.Drivers[i].NodeID == c.Node, fmt.Sprintf("%+v", n.Spec.Drivers)
	})
	// Inline volumes need the driver's CSIDriver object to list Ephemeral.
	c.MustKubectl(t, `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: `+csiDriverName+`
spec:
  attachRequired: false
  volumeLifecycleModes: [Persistent, Ephemeral]
`, "apply", "-f", "-")
	return d
}

// createVolume creates a volume through csi-local's controller service,
// as an administrator does before writing a static PersistentVolume.
func (d *csiLocal) createVolume(t *testing.T, name string) string {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+d.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := csipb.NewControllerClient(conn).CreateVolume(ctx, &csipb.CreateVolumeRequest{
		Name: name,
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", name, err)
	}
	return resp.GetVolume().GetVolumeId()
}

// stagingPath is the kubelet-layout staging path of a csi-local volume on
// the shared agent.
func stagingPath(t *testing.T, handle string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(handle))
	return filepath.Join(cluster(t).AgentRootDir, "plugins", "kubernetes.io", "csi", csiDriverName, hex.EncodeToString(sum[:]), "globalmount")
}

// csiTarget is where the pod's CSI volume (the PV's name for a claim) is published.
func csiTarget(t *testing.T, pod *v1.Pod, name string) string {
	t.Helper()
	return filepath.Join(podDir(t, pod), "volumes", "kubernetes.io~csi", name, "mount")
}

// mountCount is how many mounts are at exactly path.
func mountCount(t *testing.T, path string) int {
	t.Helper()
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		resolved = path
	}
	n := 0
	for _, m := range mountsUnder(t, path) {
		if m.MountPoint == resolved {
			n++
		}
	}
	return n
}

// waitClaimBound waits until the claim is Bound and returns its volume's name.
func waitClaimBound(t *testing.T, ns, name string) string {
	t.Helper()
	c := cluster(t)
	var pv string
	waitFor(t, time.Minute, "claim "+ns+"/"+name+" Bound", func() (bool, string) {
		pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pv = pvc.Spec.VolumeName
		return pvc.Status.Phase == v1.ClaimBound && pv != "", string(pvc.Status.Phase)
	})
	return pv
}

// agentMetrics is GET /metrics on the agent API, with the admin credential.
func agentMetrics(t *testing.T) string {
	t.Helper()
	c := cluster(t)
	tlsCfg, err := rest.TLSConfigFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.InsecureSkipVerify = true // the agent's serving certificate is not the test's concern here
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", c.KubeletPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s %v\n%s", resp.Status, err, body)
	}
	return string(body)
}

// deletePod deletes the pod and waits until it is gone.
func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	c := cluster(t)
	pods := c.Client.CoreV1().Pods(ns)
	if err := pods.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitFor(t, podTimeout, "pod "+ns+"/"+name+" gone", func() (bool, string) {
		_, err := pods.Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func claimPodYAML(t *testing.T, name, claim, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: %s}
`, name, busyboxImage(t), script+"; trap 'exit 0' TERM; while true; do sleep 1; done", claim)
}

func TestCSIStaticPersistentVolume(t *testing.T) {
	c := cluster(t)
	drv := startCSILocal(t)
	ns := newNamespace(t)
	ctx := context.Background()

	// The driver's node info is on the CSINode, its topology on the Node.
	csiNode, err := c.Client.StorageV1().CSINodes().Get(ctx, c.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	topologyKey := "topology." + csiDriverName + "/node"
	i := slices.IndexFunc(csiNode.Spec.Drivers, func(d storageDriver) bool { return d.Name == csiDriverName })
	if got := csiNode.Spec.Drivers[i].TopologyKeys; !slices.Equal(got, []string{topologyKey}) {
		t.Errorf("CSINode topology keys %v, want [%s]", got, topologyKey)
	}
	out := c.MustKubectl(t, "", "get", "csinode", c.Node, "-o", "jsonpath={.spec.drivers[*].name}")
	if !strings.Contains(out, csiDriverName) {
		t.Errorf("kubectl get csinode: drivers %q", out)
	}
	node, err := c.Client.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[topologyKey] != c.Node {
		t.Errorf("node labels %v lack %s=%s", node.Labels, topologyKey, c.Node)
	}

	// A volume created by csi-local, a PV for it pre-bound to a claim.
	pvName, handle := staticClaim(t, drv, ns, "data")

	writer := runPod(t, ns, claimPodYAML(t, "writer", "data", "echo hello from $(hostname) > /data/greeting"))
	if got := execIn(t, ns, "writer", "c", "cat", "/data/greeting"); got != "hello from writer\n" {
		t.Errorf("the pod reads %q back", got)
	}
	target, staging := csiTarget(t, writer, pvName), stagingPath(t, handle)
	if mountCount(t, target) != 1 || mountCount(t, staging) != 1 {
		t.Fatalf("%d mounts at the target %s and %d at the staging path, want 1 and 1", mountCount(t, target), target, mountCount(t, staging))
	}

	// The agent reports the volume's stats, labelled with the claim.
	series := fmt.Sprintf(`{namespace=%q,persistentvolumeclaim="data"}`, ns)
	waitFor(t, time.Minute, "volume stats on /metrics", func() (bool, string) {
		m := agentMetrics(t)
		for _, name := range []string{"capacity_bytes", "available_bytes", "used_bytes", "inodes", "inodes_free", "inodes_used"} {
			if !strings.Contains(m, "kubelet_volume_stats_"+name+series+" ") {
				return false, "no kubelet_volume_stats_" + name + series
			}
		}
		return true, ""
	})

	// The agent restarts: the volume stays published once, the pod keeps it.
	restartAgent(t)
	waitFor(t, time.Minute, "the restarted agent to register csi-local", func() (bool, string) {
		return strings.Contains(c.Agent.Log(), "CSI driver registered"), ""
	})
	// A container restart makes the agent set the pod's volumes up again.
	execIn(t, ns, "writer", "c", "sh", "-c", "kill 1")
	waitFor(t, time.Minute, "the writer's container restarted", func() (bool, string) {
		p := getPod(t, ns, "writer")
		if len(p.Status.ContainerStatuses) == 0 {
			return false, "no status"
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount > 0 && cs.State.Running != nil, describe(t, p)
	})
	if got := execIn(t, ns, "writer", "c", "cat", "/data/greeting"); got != "hello from writer\n" {
		t.Errorf("after the agent restart the pod reads %q", got)
	}
	if mountCount(t, target) != 1 || mountCount(t, staging) != 1 {
		t.Errorf("after the agent restart: %d mounts at the target and %d at the staging path, want 1 and 1", mountCount(t, target), mountCount(t, staging))
	}

	// The pod goes: nothing of the volume stays mounted on the node.
	deletePod(t, ns, "writer")
	if left := mountsUnder(t, podDir(t, writer)); len(left) != 0 {
		t.Errorf("mounts left in the deleted pod's dir: %+v", left)
	}
	if mountCount(t, staging) != 0 {
		t.Errorf("the staging path is still mounted after the last pod went")
	}

	// A new pod on the claim sees the data.
	runPod(t, ns, claimPodYAML(t, "reader", "data", "true"))
	if got := execIn(t, ns, "reader", "c", "cat", "/data/greeting"); got != "hello from writer\n" {
		t.Errorf("a new pod on the claim reads %q", got)
	}
}

// staticClaim creates a csi-local volume, a PersistentVolume for it
// pre-bound to the claim ns/claim, and the claim, and waits until it is
// Bound: the PV's name and the volume's handle.
func staticClaim(t *testing.T, drv *csiLocal, ns, claim string) (string, string) {
	t.Helper()
	c := cluster(t)
	handle := drv.createVolume(t, "static-"+ns+"-"+claim)
	pvName := "pv-" + ns + "-" + claim
	t.Cleanup(func() {
		_ = c.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: %s, name: %s}
  csi:
    driver: %s
    volumeHandle: %s
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: %s
  resources: {requests: {storage: 1Gi}}
`, pvName, ns, claim, csiDriverName, handle, claim, pvName))
	if pv := waitClaimBound(t, ns, claim); pv != pvName {
		t.Fatalf("claim bound to %s, want %s", pv, pvName)
	}
	return pvName, handle
}

// TestCSIPodDeletedWhileAgentDown: the restarted agent unpublishes and
// unstages, through the driver, the volume of a pod deleted meanwhile.
func TestCSIPodDeletedWhileAgentDown(t *testing.T) {
	c := cluster(t)
	drv := startCSILocal(t)
	ns := newNamespace(t)
	pvName, handle := staticClaim(t, drv, ns, "data")
	pod := runPod(t, ns, claimPodYAML(t, "gone", "data", "true"))
	target, staging := csiTarget(t, pod, pvName), stagingPath(t, handle)
	if mountCount(t, target) != 1 || mountCount(t, staging) != 1 {
		t.Fatalf("%d mounts at the target and %d at the staging path, want 1 and 1", mountCount(t, target), mountCount(t, staging))
	}
	restartAgent(t, func() {
		c.MustKubectl(t, "", "delete", "pod", "-n", ns, "gone", "--grace-period=0", "--force", "--wait=false")
		waitFor(t, time.Minute, "pod gone from the API", func() (bool, string) {
			_, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), "gone", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
	// The agent removes the staging directory after the driver's
	// NodeUnstageVolume has unmounted it: wait for that final state, not
	// only for the unmount.
	waitFor(t, 2*time.Minute, "the deleted pod's volume unpublished and unstaged, its staging dir removed", func() (bool, string) {
		left, staged := mountsUnder(t, podDir(t, pod)), mountCount(t, staging)
		_, err := os.Stat(filepath.Dir(staging))
		return len(left) == 0 && staged == 0 && os.IsNotExist(err), fmt.Sprintf("pod mounts %v, staging mounts %d, staging dir: %v", left, staged, err)
	})
}

func TestCSIInlineEphemeralVolume(t *testing.T) {
	startCSILocal(t)
	ns := newNamespace(t)
	pod := runPod(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: inline
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo scratch > /scratch/f; trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: scratch
    csi: {driver: %s}
`, busyboxImage(t), csiDriverName))
	if got := execIn(t, ns, "inline", "c", "cat", "/scratch/f"); got != "scratch\n" {
		t.Errorf("the pod reads %q back", got)
	}
	target := csiTarget(t, pod, "scratch")
	if mountCount(t, target) != 1 {
		t.Fatalf("inline volume not mounted at %s", target)
	}
	deletePod(t, ns, "inline")
	if left := mountsUnder(t, podDir(t, pod)); len(left) != 0 {
		t.Errorf("mounts left in the deleted pod's dir: %+v", left)
	}
}

func TestCSIFailedMount(t *testing.T) {
	startCSILocal(t)
	ns := newNamespace(t)
	// csi-local takes no attributes for inline volumes: the driver refuses.
	createPod(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: broken
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: scratch
    csi:
      driver: %s
      volumeAttributes: {size: 1Gi}
`, busyboxImage(t), csiDriverName))
	ev := waitEvent(t, ns, "broken", "FailedMount")
	want := `MountVolume.SetUp failed for volume "scratch" : rpc error: code = InvalidArgument desc = volume_context: unknown attribute "size"`
	if ev.Type != v1.EventTypeWarning || !strings.HasPrefix(ev.Message, want) || ev.Source.Component != "kubelet" {
		t.Errorf("FailedMount event %s %q from %q, want Warning %q… from kubelet", ev.Type, ev.Message, ev.Source.Component, want)
	}
	// It is retried with back-off: the event repeats (counted), the pod waits.
	waitFor(t, time.Minute, "the FailedMount event repeated", func() (bool, string) {
		for _, e := range events(t, ns, "broken") {
			if e.Reason == "FailedMount" && e.Count >= 2 {
				return true, ""
			}
		}
		return false, "count < 2"
	})
	p := getPod(t, ns, "broken")
	if p.Status.Phase != v1.PodPending {
		t.Errorf("pod phase %s, want Pending", p.Status.Phase)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
			t.Errorf("container %s state %+v, want waiting ContainerCreating", cs.Name, cs.State)
		}
	}

	// A claim that does not exist: FailedMount naming it (the pod is put
	// on the node directly: the scheduler would not place it).
	createPod(t, ns, strings.Replace(claimPodYAML(t, "no-claim", "missing", "true"), "spec:\n", "spec:\n  nodeName: "+cluster(t).Node+"\n", 1))
	want = `MountVolume.SetUp failed for volume "data" : error processing PVC ` + ns + `/missing: persistentvolumeclaims "missing" not found`
	ev = waitEventMatching(t, ns, "no-claim", "FailedMount", func(m string) bool { return strings.Contains(m, want) })
	if ev.Type != v1.EventTypeWarning {
		t.Errorf("FailedMount event %s %q, want Warning", ev.Type, ev.Message)
	}
}

// TestCSIProvisionedVolume: claims of a StorageClass whose provisioner is
// csi-local (csi-local with --kubeconfig provisions for its node), the
// data outliving the pods, and the reclaim policies.
func TestCSIProvisionedVolume(t *testing.T) {
	c := cluster(t)
	drv := startCSILocal(t, "--kubeconfig", c.Kubeconfig())
	ns := newNamespace(t)
	ctx := context.Background()
	for _, policy := range []string{"Delete", "Retain"} {
		t.Run(policy, func(t *testing.T) {
			class := strings.ToLower("local-" + policy + "-" + ns)
			if len(class) > 63 {
				class = class[:63]
			}
			c.MustKubectl(t, fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: %s
provisioner: %s
reclaimPolicy: %s
volumeBindingMode: WaitForFirstConsumer
`, class, csiDriverName, policy), "apply", "-f", "-")
			t.Cleanup(func() { c.MustKubectl(t, "", "delete", "storageclass", class, "--ignore-not-found") })
			claim := strings.ToLower("data-" + policy)
			apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: %s
  resources: {requests: {storage: 64Mi}}
`, claim, class))
			runPod(t, ns, claimPodYAML(t, "writer-"+claim, claim, "echo kept > /data/f"))
			pvName := waitClaimBound(t, ns, claim)
			pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != csiDriverName || string(pv.Spec.PersistentVolumeReclaimPolicy) != policy {
				t.Fatalf("provisioned PV %+v", pv.Spec)
			}
			t.Cleanup(func() {
				_ = c.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
			})
			deletePod(t, ns, "writer-"+claim)
			if mountCount(t, stagingPath(t, pv.Spec.CSI.VolumeHandle)) != 0 {
				t.Errorf("the volume is still staged after its pod went")
			}
			runPod(t, ns, claimPodYAML(t, "reader-"+claim, claim, "true"))
			if got := execIn(t, ns, "reader-"+claim, "c", "cat", "/data/f"); got != "kept\n" {
				t.Errorf("a new pod on the claim reads %q", got)
			}
			deletePod(t, ns, "reader-"+claim)

			// csi-local keeps a volume's data in <root>/volumes/<id> and its
			// record in <root>/state/<id>.json: both are there while the
			// claim is (checked before the claim goes, since with Delete
			// the reclaim may remove them at any moment after).
			onDisk := func() (n int) {
				for _, p := range []string{filepath.Join(drv.rootDir, "volumes", pv.Spec.CSI.VolumeHandle), filepath.Join(drv.rootDir, "state", pv.Spec.CSI.VolumeHandle+".json")} {
					if _, err := os.Stat(p); err == nil {
						n++
					}
				}
				return n
			}
			if n := onDisk(); n != 2 {
				t.Fatalf("csi-local holds %d of the volume's data and record, want 2", n)
			}

			// The claim goes: Delete removes the PV and the driver's
			// volume; Retain keeps both, the PV Released.
			if err := c.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			switch policy {
			case "Delete":
				waitFor(t, time.Minute, "PV "+pvName+" deleted", func() (bool, string) {
					_, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
					return apierrors.IsNotFound(err), fmt.Sprint(err)
				})
				waitFor(t, time.Minute, "csi-local to delete the volume", func() (bool, string) {
					return onDisk() == 0, fmt.Sprintf("%d left", onDisk())
				})
			case "Retain":
				waitFor(t, time.Minute, "PV "+pvName+" Released", func() (bool, string) {
					pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
					if err != nil {
						return false, err.Error()
					}
					return pv.Status.Phase == v1.VolumeReleased, string(pv.Status.Phase)
				})
				if n := onDisk(); n != 2 {
					t.Errorf("csi-local holds %d of the retained volume's data and record, want 2", n)
				}
			}
		})
	}
}
