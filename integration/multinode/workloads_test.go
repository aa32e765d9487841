package multinode

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"berth/integration/testbed"
)

func sleeperTemplate(bed *testbed.Bed, labels map[string]string) v1.PodTemplateSpec {
	return v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []v1.Container{{Name: "main", Image: bed.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sleep", "3600"}}}},
	}
}

// runningPerNode waits until want pods matching selector run in ns and
// returns how many run on each node.
func runningPerNode(t *testing.T, bed *testbed.Bed, ns, selector string, want int) map[string]int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, err := bed.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		per, n := map[string]int{}, 0
		var states []string
		for _, p := range pods.Items {
			states = append(states, p.Name+"@"+p.Spec.NodeName+":"+string(p.Status.Phase))
			if running(&p) {
				per[p.Spec.NodeName]++
				n++
			}
		}
		if n == want && len(pods.Items) == want {
			return per
		}
		if time.Now().After(deadline) {
			sort.Strings(states)
			t.Fatalf("%d of %d pods %s running: %s", n, want, selector, strings.Join(states, " "))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestDaemonSetOnEveryNode runs a DaemonSet: one pod on each node.
func TestDaemonSetOnEveryNode(t *testing.T) {
	bed := testbed.Current(t)
	ns := namespace(t, bed.Client)
	labels := map[string]string{"app": "everywhere"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "everywhere"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: sleeperTemplate(bed, labels)}}
	if _, err := bed.Client.AppsV1().DaemonSets(ns).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	per := runningPerNode(t, bed, ns, "app=everywhere", len(bed.Nodes))
	for _, n := range bed.Nodes {
		if per[n.Name] != 1 {
			t.Errorf("DaemonSet pods per node %v, want 1 on %s", per, n.Name)
		}
	}
}

// TestTopologySpreadAcrossZones labels the three nodes with three zones
// and spreads six replicas over topology.kubernetes.io/zone with maxSkew
// 1: two in each zone.
func TestTopologySpreadAcrossZones(t *testing.T) {
	bed := testbed.Current(t)
	ctx := context.Background()
	c := bed.Client
	for i, n := range bed.Nodes {
		zone := fmt.Sprintf("zone-%c", 'a'+i)
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1.LabelTopologyZone, zone)
		if _, err := c.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, v1.LabelTopologyZone)
			_, _ = c.CoreV1().Nodes().Patch(context.Background(), n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		})
	}
	ns := namespace(t, c)
	labels := map[string]string{"app": "spread"}
	tmpl := sleeperTemplate(bed, labels)
	tmpl.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
	}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "spread"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](6), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	per := runningPerNode(t, bed, ns, "app=spread", 6)
	for _, n := range bed.Nodes {
		if per[n.Name] != 2 {
			t.Errorf("pods per node (one zone each) %v, want 2 on %s", per, n.Name)
		}
	}
}
