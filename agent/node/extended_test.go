package node

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestKeepExtended: extended resources someone advertised in the node's
// capacity survive the agent's status update and become allocatable (the
// e2e scheduling specs patch scheduling.k8s.io/foo in); others are the
// agent's to report.
func TestKeepExtended(t *testing.T) {
	reported := v1.ResourceList{
		"scheduling.k8s.io/foo":  resource.MustParse("5"),
		"example.com/dongle":     resource.MustParse("2"),
		"kubernetes.io/whatever": resource.MustParse("1"),
		"requests.example.com/x": resource.MustParse("1"),
		v1.ResourceCPU:           resource.MustParse("64"),
	}
	capacity := KeepExtended(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: resource.MustParse("110")}, reported)
	if q := capacity["scheduling.k8s.io/foo"]; q.Value() != 5 {
		t.Errorf("foo %v", capacity)
	}
	if q := capacity["example.com/dongle"]; q.Value() != 2 {
		t.Errorf("dongle %v", capacity)
	}
	for _, n := range []v1.ResourceName{"kubernetes.io/whatever", "requests.example.com/x"} {
		if _, ok := capacity[n]; ok {
			t.Errorf("%s kept", n)
		}
	}
	if q := capacity[v1.ResourceCPU]; q.Value() != 2 {
		t.Errorf("the agent's own cpu overwritten: %v", capacity)
	}
	alloc := Allocatable(capacity, nil, nil, nil)
	if q := alloc["scheduling.k8s.io/foo"]; q.Value() != 5 {
		t.Errorf("allocatable %v", alloc)
	}
}
