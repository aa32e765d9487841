package volumebinding

import (
	"errors"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
	"berth/internal/errdefs"
)

const driver = "csi-local.berth.dev"

func indexer(objs ...runtime.Object) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			panic(err)
		}
	}
	return idx
}

// cluster is the objects the plugin's listers serve.
type cluster struct {
	claims   []runtime.Object
	volumes  []runtime.Object
	classes  []runtime.Object
	csiNodes []runtime.Object
	nodes    []runtime.Object
}

func (c cluster) plugin(t *testing.T) *Plugin {
	t.Helper()
	p, err := New(Config{
		Claims:   corelisters.NewPersistentVolumeClaimLister(indexer(c.claims...)),
		Volumes:  corelisters.NewPersistentVolumeLister(indexer(c.volumes...)),
		Classes:  storagelisters.NewStorageClassLister(indexer(c.classes...)),
		CSINodes: storagelisters.NewCSINodeLister(indexer(c.csiNodes...)),
		Nodes:    corelisters.NewNodeLister(indexer(c.nodes...)),
		// Filter never writes; PreBind is covered by integration/pv.
		Client: kubernetes.NewForConfigOrDie(&rest.Config{Host: "https://127.0.0.1:1"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func claim(name, class, volume string, ann ...string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: ktypes.UID("uid-" + name), Annotations: map[string]string{}},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  volume,
		},
	}
	if class != "-" {
		c.Spec.StorageClassName = &class
	}
	for i := 0; i+1 < len(ann); i += 2 {
		c.Annotations[ann[i]] = ann[i+1]
	}
	return c
}

func pv(name, class string, affinityNode string) *v1.PersistentVolume {
	v := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:         v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: class,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	if affinityNode != "" {
		v.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{affinityNode}}},
		}}}}
	}
	return v
}

func class(name string, mode storagev1.VolumeBindingMode, topo ...string) *storagev1.StorageClass {
	c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: driver, VolumeBindingMode: &mode}
	for i := 0; i+1 < len(topo); i += 2 {
		c.AllowedTopologies = append(c.AllowedTopologies, v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: topo[i], Values: []string{topo[i+1]}}}})
	}
	return c
}

func csiNode(name string, drivers ...string) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, d := range drivers {
		n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: name})
	}
	return n
}

func withClaim(name string) st.PodOpt {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name},
		}})
	}
}

func withEphemeral(vol string) st.PodOpt {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: vol, VolumeSource: v1.VolumeSource{
			Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}},
		}})
	}
}

func TestFilter(t *testing.T) {
	nodes := []*v1.Node{st.Node("a", st.Labels("zone", "z1")), st.Node("b", st.Labels("zone", "z2"))}
	snap := st.Snapshot(t, nodes)
	var nodeObjs []runtime.Object
	for _, n := range nodes {
		nodeObjs = append(nodeObjs, n)
	}
	ok := st.FilterResult{}
	reject := func(reason string) st.FilterResult {
		return st.FilterResult{Code: fw.UnschedulableAndUnresolvable, Reasons: []string{reason}}
	}
	wffc, imm := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	boundClaim := claim("data", "local", "pv-a", storagehelpers.AnnBindCompleted, "yes")
	owned := claim("web-scratch", "local", "")
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-web", Controller: ptrTrue()}}
	foreign := claim("web-scratch", "local", "")
	for _, tc := range []struct {
		name string
		c    cluster
		pod  *v1.Pod
		want map[string]st.FilterResult
	}{
		{"no claims: skipped", cluster{}, st.Pod("web"), map[string]st.FilterResult{"a": ok, "b": ok}},
		{"missing claim", cluster{}, st.Pod("web", withClaim("data")),
			map[string]st.FilterResult{"a": reject(`persistentvolumeclaim "data" not found`), "b": reject(`persistentvolumeclaim "data" not found`)}},
		{"unbound immediate claim", cluster{claims: []runtime.Object{claim("data", "fast", "")}, classes: []runtime.Object{class("fast", imm)}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": reject(ErrReasonUnboundImmediate), "b": reject(ErrReasonUnboundImmediate)}},
		{"unbound claim without class is immediate", cluster{claims: []runtime.Object{claim("data", "-", "")}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": reject(ErrReasonUnboundImmediate), "b": reject(ErrReasonUnboundImmediate)}},
		{"bound to a missing volume", cluster{claims: []runtime.Object{boundClaim}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": reject(ErrReasonBoundToMissingPV), "b": reject(ErrReasonBoundToMissingPV)}},
		{"bound volume's node affinity", cluster{claims: []runtime.Object{boundClaim}, volumes: []runtime.Object{pv("pv-a", "local", "a")}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": ok, "b": reject(ErrReasonNodeConflict)}},
		{"bound volume without affinity fits anywhere", cluster{claims: []runtime.Object{boundClaim}, volumes: []runtime.Object{pv("pv-a", "local", "")}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": ok, "b": ok}},
		{"WFFC: provisionable anywhere", cluster{claims: []runtime.Object{claim("data", "local", "")}, classes: []runtime.Object{class("local", wffc)}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": ok, "b": ok}},
		{"WFFC: allowedTopologies", cluster{claims: []runtime.Object{claim("data", "local", "")}, classes: []runtime.Object{class("local", wffc, "zone", "z2")}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": reject(ErrReasonBindConflict), "b": ok}},
		{"WFFC: the CSI driver must be on the node", cluster{claims: []runtime.Object{claim("data", "local", "")}, classes: []runtime.Object{class("local", wffc)},
			csiNodes: []runtime.Object{csiNode("a", driver), csiNode("b", "other.csi")}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": ok, "b": reject(ErrReasonBindConflict)}},
		{"WFFC: a node already selected", cluster{claims: []runtime.Object{claim("data", "local", "", storagehelpers.AnnSelectedNode, "b")}, classes: []runtime.Object{class("local", wffc)}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": reject(ErrReasonBindConflict), "b": ok}},
		{"WFFC: no-provisioner class needs a static volume on the node", cluster{
			claims:  []runtime.Object{claim("data", "manual", "")},
			classes: []runtime.Object{&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "manual"}, Provisioner: storagehelpers.NotSupportedProvisioner, VolumeBindingMode: &wffc}},
			volumes: []runtime.Object{pv("local-a", "manual", "a")}},
			st.Pod("web", withClaim("data")), map[string]st.FilterResult{"a": ok, "b": reject(ErrReasonBindConflict)}},
		{"WFFC: two claims cannot share one static volume", cluster{
			claims:  []runtime.Object{claim("d1", "manual", ""), claim("d2", "manual", "")},
			classes: []runtime.Object{&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "manual"}, Provisioner: storagehelpers.NotSupportedProvisioner, VolumeBindingMode: &wffc}},
			volumes: []runtime.Object{pv("local-a", "manual", "a"), pv("local-b1", "manual", "b"), pv("local-b2", "manual", "b")}},
			st.Pod("web", withClaim("d1"), withClaim("d2")), map[string]st.FilterResult{"a": reject(ErrReasonBindConflict), "b": ok}},
		{"ephemeral claim owned by the pod", cluster{claims: []runtime.Object{owned}, classes: []runtime.Object{class("local", wffc, "zone", "z1")}},
			podWithUID(st.Pod("web", withEphemeral("scratch"))), map[string]st.FilterResult{"a": ok, "b": reject(ErrReasonBindConflict)}},
		{"ephemeral claim not created yet", cluster{}, podWithUID(st.Pod("web", withEphemeral("scratch"))),
			map[string]st.FilterResult{"a": reject(`persistentvolumeclaim "web-scratch" not found`), "b": reject(`persistentvolumeclaim "web-scratch" not found`)}},
		{"ephemeral claim of someone else", cluster{claims: []runtime.Object{foreign}, classes: []runtime.Object{class("local", wffc)}},
			podWithUID(st.Pod("web", withEphemeral("scratch"))),
			map[string]st.FilterResult{"a": reject("PVC default/web-scratch was not created for pod default/web (pod is not owner)"), "b": reject("PVC default/web-scratch was not created for pod default/web (pod is not owner)")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.nodes = nodeObjs
			tc.pod.Namespace = "default"
			got := st.RunFilter(t, tc.c.plugin(t), tc.pod, snap)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func ptrTrue() *bool { b := true; return &b }

func podWithUID(p *v1.Pod) *v1.Pod {
	p.UID = "uid-web"
	return p
}

func TestMatchTopology(t *testing.T) {
	terms := []v1.TopologySelectorTerm{
		{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"z1", "z2"}}, {Key: "rack", Values: []string{"r1"}}}},
		{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"z9"}}}},
	}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"zone": "z2", "rack": "r1"}, true},
		{map[string]string{"zone": "z2"}, false},
		{map[string]string{"zone": "z9"}, true},
		{map[string]string{"zone": "z3", "rack": "r1"}, false},
	} {
		if got := MatchTopology(terms, tc.labels); got != tc.want {
			t.Errorf("MatchTopology(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("New(empty) err = %v, want ErrInvalidArgument", err)
	}
}
