// Command e2enode runs the container runtime of a berth node whose agent
// runs on its own (`berth agent`), as `berth up` runs it: berth's containerd
// with the config berth generates (under -dir), the registries of a k3s
// registries.yaml, and the sandbox image given. It writes -dir/ready holding
// the CRI endpoint once containerd answers, and on SIGTERM or SIGINT
// removes every pod through CRI (stop the agent first), stops containerd,
// unmounts what is left under -unmount-under and deletes the pod bridge.
//
// It is a tool of `make conformance TARGET=upstream-control-plane`
// (hack/conformance/upstream.sh), not part of berth.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"berth/internal/containerd"
	"berth/up"
)

func main() {
	dir := flag.String("dir", "", "containerd's directory: config, root, state, socket, log (required)")
	cniConfDir := flag.String("cni-conf-dir", "", "CNI conf dir the agent writes its conflist to (required)")
	cniBinDir := flag.String("cni-bin-dir", "/usr/lib/cni", "directory of the CNI plugins")
	registries := flag.String("registries", "", "registries file (k3s registries.yaml format)")
	sandboxImage := flag.String("sandbox-image", "", "sandbox (pause) image (required)")
	bridge := flag.String("bridge", "", "the agent's pod bridge, deleted at the end (required)")
	unmountUnder := flag.String("unmount-under", "", "at the end, unmount whatever is left under this directory (default -dir; give the agent's root too)")
	flag.Parse()
	if *unmountUnder == "" {
		*unmountUnder = *dir
	}
	if err := run(*dir, *cniConfDir, *cniBinDir, *registries, *sandboxImage, *bridge, *unmountUnder); err != nil {
		fmt.Fprintln(os.Stderr, "e2enode:", err)
		os.Exit(1)
	}
}

func run(dir, cniConfDir, cniBinDir, registriesFile, sandboxImage, bridge, unmountUnder string) error {
	if dir == "" || cniConfDir == "" || sandboxImage == "" || bridge == "" {
		return errors.New("-dir, -cni-conf-dir, -sandbox-image and -bridge are required")
	}
	var regs containerd.Registries
	if registriesFile != "" {
		var err error
		if regs, err = containerd.LoadRegistries(registriesFile); err != nil {
			return fmt.Errorf("-registries: %w", err)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctd, err := containerd.New(containerd.Config{
		Dir: dir, CNIConfDir: cniConfDir, CNIBinDir: cniBinDir,
		SandboxImage: sandboxImage, Registries: regs, Logger: log,
	})
	if err != nil {
		return err
	}
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// containerd outlives the signal until the pods are gone.
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	done := make(chan error, 1)
	go func() { done <- ctd.Run(runCtx) }()
	select {
	case <-ctd.Ready():
	case err := <-done:
		return fmt.Errorf("containerd stopped while starting: %v", err)
	case <-sig.Done():
		cancelRun()
		return errors.Join(<-done, up.HostCleanup(unmountUnder, bridge))
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), []byte(ctd.Endpoint()+"\n"), 0o644); err != nil {
		return err
	}
	log.Info("containerd ready", "endpoint", ctd.Endpoint(), "version", ctd.Version())
	var errs []error
	select {
	case <-sig.Done():
		errs = append(errs, up.RemoveAllPods(ctd.Endpoint()))
		cancelRun()
		errs = append(errs, <-done)
	case err := <-done:
		errs = append(errs, fmt.Errorf("containerd stopped: %v", err))
	}
	errs = append(errs, up.HostCleanup(unmountUnder, bridge))
	return errors.Join(errs...)
}
