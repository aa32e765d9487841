package multinode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
	"berth/integration/testbed"
)

// degraded is how long the cluster runs on two etcd members.
const degraded = 15 * time.Second

// The etcd leader lost (a crash: no leadership handed over) while each
// server replica takes a steady stream of writes: the two members left
// elect a leader and every write begun after that succeeds through both
// servers; only writes in flight while there was no leader may fail (with
// etcd's "request timed out", as under kube-apiserver: whether such a
// write was applied is unknown to etcd's client, which does not retry
// it). No acknowledged write is lost, no node goes NotReady, and the
// member started again on its data dir rejoins and holds every write. It
// logs the writes and their latency before, during the election, on two
// members, and after the rejoin.
func TestEtcdMemberLost(t *testing.T) {
	bed := testbed.Current(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := namespace(t, bed.Client)
	notReady := watchNotReady(t, ctx, bed)

	w := startWriters(t, ctx, bed, ns)
	w.waitAcked(t, time.Time{}, 40, "writes before the loss")
	lost := bed.EtcdLeader()
	if lost < 0 {
		t.Fatal("no etcd member leads")
	}
	lostAt := time.Now()
	bed.LoseEtcdMember(lost)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := bed.RestartEtcdMember(lost); err != nil {
				t.Errorf("restarting etcd member %d: %v", lost, err)
			}
		}
	})
	harness.WaitFor(t, 30*time.Second, "a new etcd leader", func() (bool, string) {
		l := bed.EtcdLeader()
		return l >= 0 && l != lost, fmt.Sprintf("leader %d", l)
	})
	electedAt := time.Now()
	t.Logf("lost etcd member %d (the leader); member %d seen leading %s after", lost, bed.EtcdLeader(), electedAt.Sub(lostAt).Round(time.Millisecond))
	w.waitAcked(t, electedAt, 40, "writes on two members")
	time.Sleep(degraded - time.Since(lostAt)) // the fault itself: the writers go on meanwhile
	rejoinAt := time.Now()
	if err := bed.RestartEtcdMember(lost); err != nil {
		t.Fatal(err)
	}
	restarted = true
	rejoined := time.Now()
	t.Logf("member %d rejoined after %s", lost, rejoined.Sub(rejoinAt).Round(time.Millisecond))
	w.waitAcked(t, rejoined, 40, "writes after the rejoin")
	writes := w.stop()

	phases := []struct {
		name     string
		from, to time.Time
	}{
		{"3 members", time.Time{}, lostAt},
		{"until a leader seen", lostAt, electedAt},
		{"2 members", electedAt, rejoinAt},
		{"member rejoining", rejoinAt, rejoined},
		{"3 members again", rejoined, time.Now().Add(time.Hour)},
	}
	t.Logf("%-20s %7s %7s %9s %9s %9s", "writes begun", "writes", "failed", "p50", "p99", "max")
	for _, p := range phases {
		var ok []time.Duration
		failed := 0
		for _, wr := range writes {
			if wr.at.Before(p.from) || !wr.at.Before(p.to) {
				continue
			}
			if wr.err != nil {
				failed++
			} else {
				ok = append(ok, wr.took)
			}
		}
		t.Logf("%-20s %7d %7d %9s %9s %9s", p.name, len(ok)+failed, failed, quantile(ok, 0.5), quantile(ok, 0.99), quantile(ok, 1))
	}
	var acked []string
	failed := 0
	resumed := time.Duration(-1) // the first write begun after the loss to succeed, returned
	for _, wr := range writes {
		if wr.err == nil {
			acked = append(acked, wr.name)
			if back := wr.at.Add(wr.took).Sub(lostAt); !wr.at.Before(lostAt) && (resumed < 0 || back < resumed) {
				resumed = back
			}
			continue
		}
		failed++
		inElection := wr.at.Before(electedAt) && wr.at.Add(wr.took).After(lostAt)
		t.Logf("failed: %s through server %d, begun %s after the loss, after %s: %v", wr.name, wr.server, wr.at.Sub(lostAt).Round(time.Millisecond), wr.took.Round(time.Millisecond), wr.err)
		if !inElection {
			t.Errorf("write %s failed though not in flight while etcd had no leader", wr.name)
		}
	}

	// Nothing acknowledged is lost: each server lists every write, and the
	// rejoined member holds each of them itself once it has caught up.
	missing := map[string]bool{}
	for i, s := range bed.Servers {
		list, err := serverClient(t, bed, s).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		for _, m := range missingFrom(acked, names) {
			missing[m] = true
			t.Errorf("server %d does not list the acknowledged %s", i, m)
		}
	}
	keys := memberKeys(t, ctx, bed, lost, "/registry/configmaps/"+ns+"/")
	for _, m := range missingFrom(acked, keys) {
		missing[m] = true
		t.Errorf("the rejoined member %d lacks the acknowledged %s", lost, m)
	}
	t.Logf("writes %d: acknowledged %d, lost %d; failed %d; the first write begun after the loss succeeded %s after it",
		len(writes), len(acked), len(missing), failed, resumed.Round(time.Millisecond))
	if got := notReady(); len(got) > 0 {
		t.Errorf("nodes went NotReady while etcd kept a quorum: %v", got)
	}
}

// write is one create through a server replica.
type write struct {
	name   string
	server int
	at     time.Time
	took   time.Duration
	err    error
}

// writers create ConfigMaps in a namespace through each server replica, ten
// a second each, each write begun on time whether the ones before it have
// returned or not.
type writers struct {
	mu     sync.Mutex
	writes []write
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startWriters(t *testing.T, ctx context.Context, bed *testbed.Bed, ns string) *writers {
	t.Helper()
	w := &writers{}
	ctx, w.cancel = context.WithCancel(ctx)
	for i, s := range bed.Servers {
		cms := serverClient(t, bed, s).CoreV1().ConfigMaps(ns)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				w.wg.Add(1)
				go func() {
					defer w.wg.Done()
					name := fmt.Sprintf("s%d-%05d", i, n)
					at := time.Now()
					_, err := cms.Create(context.WithoutCancel(ctx), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": name}}, metav1.CreateOptions{})
					w.mu.Lock()
					w.writes = append(w.writes, write{name: name, server: i, at: at, took: time.Since(at), err: err})
					w.mu.Unlock()
				}()
			}
		}()
	}
	t.Cleanup(func() { w.stop() })
	return w
}

// waitAcked waits until n writes begun after from have succeeded.
func (w *writers) waitAcked(t *testing.T, from time.Time, n int, what string) {
	t.Helper()
	harness.WaitFor(t, time.Minute, what, func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		ok := 0
		for _, wr := range w.writes {
			if wr.err == nil && !wr.at.Before(from) {
				ok++
			}
		}
		return ok >= n, fmt.Sprintf("%d of %d", ok, n)
	})
}

// stop ends the writers, waits for the writes in flight and returns every
// write.
func (w *writers) stop() []write {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}

// memberKeys waits until etcd member i has applied what the cluster has
// committed (its revision reaches the leader's) and returns the keys under
// prefix it holds, read from that member alone (a serializable read).
func memberKeys(t *testing.T, ctx context.Context, bed *testbed.Bed, i int, prefix string) []string {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{bed.EtcdURL[i]}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leader := bed.EtcdLeader()
	if leader < 0 {
		t.Fatal("no etcd member leads")
	}
	st, err := c.Status(ctx, bed.EtcdURL[leader])
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, time.Minute, fmt.Sprintf("etcd member %d at revision %d", i, st.Header.Revision), func() (bool, string) {
		own, err := c.Status(ctx, bed.EtcdURL[i])
		if err != nil {
			return false, err.Error()
		}
		return own.Header.Revision >= st.Header.Revision, fmt.Sprintf("at %d", own.Header.Revision)
	})
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSerializable())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, kv := range resp.Kvs {
		names = append(names, strings.TrimPrefix(string(kv.Key), prefix))
	}
	return names
}

// missingFrom is what of want is not in have.
func missingFrom(want, have []string) []string {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var missing []string
	for _, w := range want {
		if !set[w] {
			missing = append(missing, w)
		}
	}
	return missing
}

// quantile is the q-quantile of ds (q=1: the largest), "-" for none.
func quantile(ds []time.Duration, q float64) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))].Round(time.Millisecond).String()
}
