package testbed

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"

	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/prereq"
)

var (
	currentMu sync.Mutex
	current   *Bed
)

// Main is TestMain for a package sharing one test bed: it checks the
// prerequisites (missing: the package fails under CI=true, is skipped
// otherwise; -short skips it), starts the bed with opts, runs the tests,
// prints the logs of the processes when a test failed, and tears the bed
// down (an interrupt tears it down too).
func Main(m *testing.M, opts Options) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("testbed: -short: skipping the multi-node tests")
		os.Exit(0)
	}
	if err := nodeenv.CheckPrerequisites(); err != nil {
		if prereq.InCI() {
			fmt.Fprintf(os.Stderr, "testbed: FAIL: prerequisite missing under CI=true: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("testbed: SKIP: the multi-node tests need: %v\n", err)
		os.Exit(0)
	}
	bed, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbed: FAIL: start: %v\n", err)
		harness.RemoveBinary()
		os.Exit(1)
	}
	currentMu.Lock()
	current = bed
	currentMu.Unlock()
	fmt.Printf("testbed: %d servers (%s) on a 3-member etcd, %d nodes on %s (%s)\n",
		len(bed.Servers), bed.ServerURLs(), len(bed.Nodes), bed.Bridge, bed.Opts.Underlay)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if sig, ok := <-sigs; ok {
			fmt.Fprintf(os.Stderr, "testbed: %v: tearing down\n", sig)
			_ = bed.Stop()
			os.Exit(1)
		}
	}()
	code := m.Run()
	signal.Stop(sigs)
	close(sigs)
	if code != 0 {
		bed.printLogs()
	}
	if err := bed.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testbed: FAIL: teardown left something behind: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	harness.RemoveBinary()
	os.Exit(code)
}

// Current is the bed Main started; it fails tb when there is none.
func Current(tb testing.TB) *Bed {
	tb.Helper()
	currentMu.Lock()
	defer currentMu.Unlock()
	if current == nil {
		tb.Fatal("testbed: no test bed: call testbed.Main(m, opts) from the package's TestMain")
	}
	return current
}

// printLogs writes the tail of every process's log to stderr.
func (b *Bed) printLogs() {
	for _, s := range b.Servers {
		if s.Proc != nil {
			fmt.Fprintf(os.Stderr, "--- %s (tail) ---\n%s\n", s.Name, s.Tail(8000))
		}
	}
	for _, n := range b.Nodes {
		for _, p := range []*Proc{n.Agent, n.Containerd} {
			if p != nil {
				fmt.Fprintf(os.Stderr, "--- %s (tail) ---\n%s\n", p.Name, p.Tail(8000))
			}
		}
	}
}
