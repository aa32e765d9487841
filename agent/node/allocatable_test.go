package node

import (
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestMachineAllocatable: what unset limits read as is the Node's
// allocatable — every CPU, MemTotal less the memory.available threshold,
// the root filesystem less nodefs.available.
func TestMachineAllocatable(t *testing.T) {
	dir := t.TempDir()
	got, err := MachineAllocatable(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadMachine(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Allocatable(Capacity(m, DefaultMaxPods), nil, nil, DefaultEvictionHard())
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods} {
		g, w := got[name], want[name]
		if g.Cmp(w) != 0 {
			t.Errorf("%s = %s, want %s", name, g.String(), w.String())
		}
	}
	if cpu := got[v1.ResourceCPU]; cpu.Value() != int64(runtime.NumCPU()) {
		t.Errorf("cpu = %s, want %d", cpu.String(), runtime.NumCPU())
	}
	mem := got[v1.ResourceMemory]
	if mem.Value() <= 0 || uint64(mem.Value()) >= m.MemoryTotal {
		t.Errorf("memory = %d, want below MemTotal %d (the eviction threshold is reserved)", mem.Value(), m.MemoryTotal)
	}
	if es := got[v1.ResourceEphemeralStorage]; es.Value() <= 0 {
		t.Errorf("ephemeral-storage = %s, want positive", es.String())
	}
}
