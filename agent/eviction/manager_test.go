package eviction

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"berth/agent/node"
)

type event struct{ kind, reason, message string }

type recorder struct{ events []event }

func (r *recorder) Eventf(o runtime.Object, eventtype, reason, format string, args ...interface{}) {
	r.AnnotatedEventf(o, nil, eventtype, reason, format, args...)
}

func (r *recorder) AnnotatedEventf(o runtime.Object, _ map[string]string, eventtype, reason, format string, args ...interface{}) {
	kind := "Node"
	if p, ok := o.(*v1.Pod); ok {
		kind = p.Name
	}
	r.events = append(r.events, event{kind, reason, strings.TrimSpace(strings.ReplaceAll(format, "%s", args[0].(string)))})
}

type killed struct {
	pod       string
	grace     time.Duration
	message   string
	condition *v1.PodCondition
}

// harness is a Manager on a scripted summary.
type harness struct {
	m       *Manager
	clock   *clocktesting.FakeClock
	summary *statsapi.Summary
	at      time.Time
	pods    []*v1.Pod
	killed  []killed
	images  int // DeleteUnusedImages calls
	// reclaims are the node-level reclaims in call order: "containers"
	// (DeleteAllUnusedContainers), "images".
	reclaims []string
	freed    uint64 // bytes the next image collection frees
	// freedByContainers: the next container collection's.
	freedByContainers uint64
	dedicated         bool // the images have a filesystem of their own
	rec               *recorder
}

func newHarness(t *testing.T, hard, soft, grace string) *harness {
	t.Helper()
	h := &harness{clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), rec: &recorder{}}
	ht, err := node.ParseThresholds(hard)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := node.ParseThresholds(soft)
	gp, _ := ParseGracePeriods(grace)
	ts, err := Thresholds(ht, st, gp, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.m, err = New(Config{
		Thresholds: ts, MaxPodGracePeriod: 20 * time.Second, Clock: h.clock, Recorder: h.rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n"},
		Summary: func() (*statsapi.Summary, time.Time, error) { return h.summary, h.at, nil },
		Refresh: func(context.Context) error {
			h.at = h.at.Add(time.Millisecond)
			return nil
		},
		Pods: func() []*v1.Pod { return h.pods },
		Kill: func(p *v1.Pod, grace time.Duration, msg string, c *v1.PodCondition) bool {
			h.killed = append(h.killed, killed{p.Name, grace, msg, c})
			return true
		},
		Stopped: func(types.UID) bool { return true },
		DeleteAllUnusedContainers: func(context.Context) error {
			h.reclaims = append(h.reclaims, "containers")
			*h.summary.Node.Fs.AvailableBytes += h.freedByContainers
			return nil
		},
		DeleteUnusedImages: func(context.Context) error {
			h.images++
			h.reclaims = append(h.reclaims, "images")
			*h.summary.Node.Fs.AvailableBytes += h.freed
			return nil
		},
		DedicatedImageFs: func(context.Context) (bool, error) { return h.dedicated, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// sample sets the next summary: the node's memory and disk, and each pod's
// working set.
func (h *harness) sample(memAvail, diskAvail uint64, pods map[string]uint64) {
	h.clock.Step(10 * time.Second)
	h.at = h.clock.Now()
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{AvailableBytes: ptr(memAvail), WorkingSetBytes: ptr(8<<30 - memAvail)},
		Fs:     &statsapi.FsStats{AvailableBytes: ptr(diskAvail), CapacityBytes: ptr(uint64(100 << 30))},
	}}
	for _, p := range h.pods {
		ws := pods[p.Name]
		s.Pods = append(s.Pods, statsapi.PodStats{PodRef: statsapi.PodReference{Name: p.Name, UID: string(p.UID)},
			Memory:     &statsapi.MemoryStats{WorkingSetBytes: ptr(ws)},
			Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: ptr(ws)}}}})
	}
	h.summary = s
}

func withUID(p *v1.Pod) *v1.Pod {
	p.UID = types.UID(p.Name)
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
	return p
}

func TestManagerEvictsOnePodRankedAndAdmits(t *testing.T) {
	h := newHarness(t, "memory.available<1Gi", "", "")
	static := withUID(pod("static", 0, "", ""))
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	h.pods = []*v1.Pod{
		withUID(pod("guaranteed", 0, "500Mi", "")), withUID(pod("hog", 0, "", "")), static,
	}
	ctx := context.Background()
	h.sample(4<<30, 50<<30, map[string]uint64{"guaranteed": 100 << 20, "hog": 600 << 20, "static": 900 << 20})
	if h.m.synchronize(ctx) != nil || len(h.m.Conditions()) != 0 {
		t.Fatalf("no pressure: evicted %v, conditions %v", h.killed, h.m.Conditions())
	}
	besteffort := pod("new", 0, "", "")
	if _, _, ok := h.m.Admit(besteffort); !ok {
		t.Fatal("a BestEffort pod is refused without pressure")
	}
	// The static pod uses the most, but is critical: the hog goes.
	h.sample(900<<20, 50<<30, map[string]uint64{"guaranteed": 100 << 20, "hog": 600 << 20, "static": 900 << 20})
	if got := h.m.synchronize(ctx); got == nil || got.Name != "hog" {
		t.Fatalf("evicted %v, want the hog", got)
	}
	if len(h.reclaims) != 0 {
		t.Errorf("memory pressure reclaimed %v", h.reclaims)
	}
	k := h.killed[0]
	wantMsg := "The node was low on resource: memory. Threshold quantity: 1Gi, available: 900Mi. Container c was using 600Mi, request is 0, has larger consumption of memory. "
	if k.grace != 2*time.Second || k.message != wantMsg || k.condition.Type != v1.DisruptionTarget ||
		k.condition.Reason != v1.PodReasonTerminationByKubelet || k.condition.Message != wantMsg {
		t.Errorf("killed %+v\nwant grace 2s, message %q", k, wantMsg)
	}
	if want := []v1.NodeConditionType{v1.NodeMemoryPressure}; len(h.m.Conditions()) != 1 || h.m.Conditions()[0] != want[0] {
		t.Errorf("conditions %v, want %v", h.m.Conditions(), want)
	}
	wantEvents := []event{{"Node", "EvictionThresholdMet", "Attempting to reclaim memory"}, {"hog", "Evicted", strings.TrimSpace(wantMsg)}}
	if len(h.rec.events) != 2 || h.rec.events[0] != wantEvents[0] || h.rec.events[1] != wantEvents[1] {
		t.Errorf("events %+v, want %+v", h.rec.events, wantEvents)
	}
	// Under memory pressure: BestEffort refused unless it tolerates the taint.
	reason, msg, ok := h.m.Admit(besteffort)
	if ok || reason != "Evicted" || msg != "The node had condition: [MemoryPressure]. " {
		t.Errorf("BestEffort under memory pressure: %q %q %v", reason, msg, ok)
	}
	tolerating := besteffort.DeepCopy()
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	if _, _, ok := h.m.Admit(tolerating); !ok {
		t.Error("a BestEffort pod tolerating memory-pressure is refused")
	}
	if _, _, ok := h.m.Admit(pod("burstable", 0, "10Mi", "")); !ok {
		t.Error("a Burstable pod is refused under memory pressure")
	}
	// The same sample again: nothing new observed, nothing done.
	if got := h.m.synchronize(ctx); got != nil {
		t.Errorf("a second look at the same sample evicted %s", got.Name)
	}
}

func TestManagerSoftGracePeriod(t *testing.T) {
	h := newHarness(t, "", "memory.available<1Gi", "memory.available=15s")
	h.pods = []*v1.Pod{withUID(pod("hog", 0, "", ""))}
	ctx := context.Background()
	h.sample(900<<20, 50<<30, map[string]uint64{"hog": 600 << 20})
	if h.m.synchronize(ctx) != nil {
		t.Fatal("evicted before the soft threshold's grace period")
	}
	h.sample(900<<20, 50<<30, map[string]uint64{"hog": 600 << 20})
	if h.m.synchronize(ctx) != nil {
		t.Fatal("evicted 10 s into a 15 s grace period")
	}
	h.sample(900<<20, 50<<30, map[string]uint64{"hog": 600 << 20})
	if got := h.m.synchronize(ctx); got == nil {
		t.Fatal("not evicted after the grace period")
	}
	// min(--eviction-max-pod-grace-period 20s, the pod's 30s).
	if h.killed[0].grace != 20*time.Second {
		t.Errorf("grace %s, want 20s", h.killed[0].grace)
	}
}

func TestManagerReclaimsImagesBeforeEvicting(t *testing.T) {
	h := newHarness(t, "nodefs.available<10%", "", "")
	h.pods = []*v1.Pod{withUID(pod("writer", 0, "", ""))}
	ctx := context.Background()
	h.freed = 2 << 30 // 9 Gi + 2 Gi free after image GC: above 10 %
	h.sample(4<<30, 9<<30, nil)
	if got := h.m.synchronize(ctx); got != nil || h.images != 1 {
		t.Fatalf("evicted %v after %d image collections, want none after 1", got, h.images)
	}
	if c := h.m.Conditions(); len(c) != 1 || c[0] != v1.NodeDiskPressure {
		t.Errorf("conditions %v, want [DiskPressure]", c)
	}
	if _, _, ok := h.m.Admit(pod("burstable", 0, "10Mi", "")); ok {
		t.Error("a pod was admitted under disk pressure")
	}
	h.freed = 0 // nothing left to collect: the pod goes
	h.sample(4<<30, 9<<30, nil)
	if got := h.m.synchronize(ctx); got == nil || h.images != 2 {
		t.Fatalf("evicted %v after %d image collections, want the writer after 2", got, h.images)
	}
	if want := []string{"containers", "images", "containers", "images"}; !slices.Equal(h.reclaims, want) {
		t.Errorf("reclaimed %v, want %v (the finished pods' containers, then images)", h.reclaims, want)
	}
	if !strings.HasPrefix(h.killed[0].message, "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 9Gi. ") {
		t.Errorf("message %q", h.killed[0].message)
	}
}

// The finished pods' containers are reclaimed first, as upstream's
// DeleteAllUnusedContainers: when they free enough no image goes and no
// pod is evicted.
func TestManagerReclaimsDeadContainersFirst(t *testing.T) {
	h := newHarness(t, "nodefs.available<10%", "", "")
	h.pods = []*v1.Pod{withUID(pod("writer", 0, "", ""))}
	h.freedByContainers, h.freed = 2<<30, 2<<30
	h.sample(4<<30, 9<<30, nil)
	if got := h.m.synchronize(context.Background()); got != nil {
		t.Fatalf("evicted %v", got.Name)
	}
	// Images are still collected in the same pass (upstream runs every
	// reclaim function of the signal, then looks again).
	if want := []string{"containers", "images"}; !slices.Equal(h.reclaims, want) {
		t.Errorf("reclaimed %v, want %v", h.reclaims, want)
	}
}

// With a dedicated image filesystem, nodefs pressure reclaims nothing (the
// containers' layers and the images are elsewhere) and evicts; imagefs
// pressure reclaims containers and images.
func TestManagerDedicatedImageFsReclaimsOnlyForImageFs(t *testing.T) {
	h := newHarness(t, "nodefs.available<10%", "", "")
	h.dedicated = true
	h.pods = []*v1.Pod{withUID(pod("writer", 0, "", ""))}
	h.freedByContainers, h.freed = 2<<30, 2<<30
	h.sample(4<<30, 9<<30, nil)
	if got := h.m.synchronize(context.Background()); got == nil || len(h.reclaims) != 0 {
		t.Fatalf("evicted %v after reclaiming %v, want the writer after none", got, h.reclaims)
	}
	if got := h.m.nodeReclaims(context.Background(), node.SignalImageFsAvailable); len(got) != 2 {
		t.Errorf("imagefs pressure reclaims %d ways, want containers and images", len(got))
	}
}
