// Package nodeenv is the node test environment every integration test
// package runs on: one isolated containerd per test package, with its own
// root, state dir, socket, CNI configuration, bridge and pod subnet, the test
// images built in Go and served from registries on 127.0.0.1, and a Stop that
// leaves nothing behind on the host (no sandboxes, mounts, netns, bridge,
// processes or temp dirs).
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { nodeenv.Main(m, nodeenv.Options{}) }
//
// and in tests: env := nodeenv.Current().
package nodeenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// Options tune the environment a package gets.
type Options struct {
	// SkipCNIConfig leaves Env.CNIConfDir empty: the code under test (e.g.
	// the agent) writes its own conflist there, for Env.BridgeName and
	// Env.PodCIDR.
	SkipCNIConfig bool
}

var (
	currentMu sync.Mutex
	current   *Env
)

// Main runs a test package on a fresh environment and exits with Run's
// code.
func Main(m *testing.M, opts Options) { os.Exit(Run(m, opts)) }

// Run runs a test package on a fresh environment. It checks the
// prerequisites (missing under CI=true: code 1 with the reason; otherwise
// the package is skipped with the reason; with -short the package is skipped
// too), starts the environment, prints the containerd version it talks to,
// runs the tests, stops the environment and returns the exit code for
// TestMain. containerd's log is printed when the environment or a test
// fails. An interrupt (SIGINT, SIGTERM) stops the environment and exits the
// process.
func Run(m *testing.M, opts Options) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("nodeenv: -short: skipping the integration tests of this package")
		return 0
	}
	if err := CheckPrerequisites(); err != nil {
		if inCI() {
			fmt.Fprintf(os.Stderr, "nodeenv: FAIL: prerequisite missing under CI=true: %v\n", err)
			return 1
		}
		fmt.Printf("nodeenv: SKIP: the integration tests of this package need: %v\n", err)
		return 0
	}

	env, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodeenv: FAIL: start: %v\n", err)
		return 1
	}
	currentMu.Lock()
	current = env
	currentMu.Unlock()
	fmt.Printf("nodeenv: %s (CRI %s) at %s, pod CIDR %s on bridge %s\n",
		env.ContainerdVersion, env.criAPIVersion, env.Endpoint, env.PodCIDR, env.BridgeName)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "nodeenv: %v: stopping the environment\n", sig)
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "nodeenv: stop: %v\n", err)
		}
		os.Exit(1)
	}()

	code := m.Run()
	signal.Stop(sigs)
	close(sigs)
	if code != 0 {
		env.printLog(os.Stderr)
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "nodeenv: FAIL: stop left something behind: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Current is the environment Main started for this package; nil outside Main.
func Current() *Env {
	currentMu.Lock()
	defer currentMu.Unlock()
	return current
}

// Require is the prerequisite check for a single test: it fails the test
// under CI=true and skips it otherwise when a prerequisite is missing, and
// fails it when the package's TestMain did not start an environment.
func Require(tb testing.TB) {
	tb.Helper()
	requirePrerequisites(tb)
	if Current() == nil {
		tb.Fatal("nodeenv: no environment: call nodeenv.Main(m, opts) from the package's TestMain")
	}
}

// requirePrerequisites fails (CI=true) or skips tb when a prerequisite is missing.
func requirePrerequisites(tb testing.TB) {
	tb.Helper()
	if err := CheckPrerequisites(); err != nil {
		if inCI() {
			tb.Fatalf("nodeenv: prerequisite missing under CI=true: %v", err)
		}
		tb.Skipf("nodeenv: needs %v", err)
	}
}

func inCI() bool { return os.Getenv("CI") == "true" }
