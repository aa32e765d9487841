package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkRollout1000 runs the planner through a whole 25%/25% rolling
// update of 1000 replicas (pods available at once), one op per rollout.
func BenchmarkRollout1000(b *testing.B) {
	steps := 0
	for b.Loop() {
		d := mkDeploy(1000, "v1", intstr.FromString("25%"), intstr.FromString("25%"))
		d.Spec.Template = template("v2")
		c := &cluster{d: d, rss: []*appsv1.ReplicaSet{mkRS("web-old", "v1", 1, 1000, 1000, t0)}}
		steps = 0
		for !deploymentComplete(c.d, &c.d.Status) {
			c.step(b, t0.Add(time.Duration(steps)*time.Second))
			c.settle(true)
			steps++
			if steps > 100 {
				b.Fatalf("rollout did not finish: %s", c.sizes())
			}
		}
	}
	b.ReportMetric(float64(steps), "steps/rollout")
}
