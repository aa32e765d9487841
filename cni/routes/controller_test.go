package routes

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"berth/internal/errdefs"
)

type recorded struct{ node, typ, reason, msg string }

type fakeRecorder struct{ events []recorded }

func (r *fakeRecorder) Eventf(obj runtime.Object, typ, reason, format string, args ...any) {
	ref := obj.(*v1.ObjectReference)
	r.events = append(r.events, recorded{ref.Name, typ, reason, fmt.Sprintf(format, args...)})
}

// TestReportWarnsOncePerUnreachablePeer: a Warning Event on this node's
// Node when a peer becomes unreachable, not again while it stays so, and
// again after it was reachable in between.
func TestReportWarnsOncePerUnreachablePeer(t *testing.T) {
	rec := &fakeRecorder{}
	c, err := New(Config{Client: fake.NewClientset(), NodeName: "a", Table: "berth-egress-test", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	far := Unreachable{Node: "far", PodCIDR: p("10.64.9.0/24"), InternalIP: ip("192.0.2.7")}
	for i, step := range [][]Unreachable{{far}, {far}, nil, {far}} {
		c.report(step)
		if want := map[int]int{0: 1, 1: 1, 2: 1, 3: 2}[i]; len(rec.events) != want {
			t.Fatalf("after step %d: %d events, want %d", i, len(rec.events), want)
		}
	}
	want := recorded{"a", v1.EventTypeWarning, EventNoRoute, far.Message()}
	if rec.events[0] != want {
		t.Errorf("event %+v, want %+v", rec.events[0], want)
	}
}

func TestNewNamesMissingFields(t *testing.T) {
	for field, cfg := range map[string]Config{
		"Client":   {NodeName: "a", Table: "t"},
		"NodeName": {Client: fake.NewClientset(), Table: "t"},
		"Table":    {Client: fake.NewClientset(), NodeName: "a"},
	} {
		_, err := New(cfg)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), field) {
			t.Errorf("New without %s = %v", field, err)
		}
	}
}
