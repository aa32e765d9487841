package replicaset

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// BenchmarkPlan1000 is the planner's cost for one sync of a 1000-replica
// ReplicaSet scaled down to 500: claim over 1000 pods, then rank them.
func BenchmarkPlan1000(b *testing.B) {
	rs := mkRS(500)
	sel := labels.SelectorFromSet(rs.Spec.Selector.MatchLabels)
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		pods[i] = mkPod(fmt.Sprintf("p%d", i), onNode(fmt.Sprintf("n%d", i%37)), readyFor(time.Duration(i)*time.Second), restarts(int32(i%5)), ownedBy("rs-uid"))
	}
	for b.Loop() {
		c := Claim(rs, sel, pods)
		if p := Manage(rs, c.Owned, nil, true, now); len(p.Delete) != 500 {
			b.Fatalf("delete %d", len(p.Delete))
		}
	}
}
