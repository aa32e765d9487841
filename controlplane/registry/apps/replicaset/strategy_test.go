package replicaset

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"berth/internal/api/scheme"
)

func TestReplicaSetStrategyAndTable(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, Status: appsv1.ReplicaSetStatus{Replicas: 9}}
	s.PrepareForCreate(context.Background(), rs)
	if rs.Generation != 1 || rs.Status.Replicas != 0 {
		t.Fatalf("after create: %+v", rs)
	}
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1}
	replicas := int32(4)
	upd := rs.DeepCopy()
	upd.Spec.Replicas = &replicas
	upd.Status = appsv1.ReplicaSetStatus{}
	s.PrepareForUpdate(context.Background(), upd, rs)
	if upd.Generation != 2 || upd.Status.Replicas != 2 {
		t.Errorf("after update: generation %d status %+v", upd.Generation, upd.Status)
	}
	out, _ := Kind.Table.ConvertToTable(context.Background(), upd, nil)
	if c := out.Rows[0].Cells; c[1] != int64(4) || c[2] != int64(2) || c[3] != int64(1) {
		t.Errorf("DESIRED CURRENT READY = %v %v %v", c[1], c[2], c[3])
	}
	pred := Kind.Predicate(labels.Everything(), fields.OneTermEqualSelector("status.replicas", "2"))
	if ok, _ := pred.Matches(upd); !ok {
		t.Error("status.replicas=2 did not match")
	}
}
