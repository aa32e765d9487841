// Command grpchealth is the gRPC health server the probes integration tests
// run in a container: it serves grpc.health.v1.Health over plain-text gRPC
// on -port. The overall server ("") is always SERVING; the service named by
// -service is SERVING unless the file -flip-file exists, when it is
// NOT_SERVING. The image holds no shell, so the same binary flips it from an
// exec: `grpchealth notserving` creates the file, `grpchealth serving`
// removes it. Services not named answer NotFound, as the standard health
// server does.
//
// Build it static: CGO_ENABLED=0 go build ./integration/agent/grpchealth.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// defaultFlipFile is where the named service's NOT_SERVING flag lives; the
// container's root filesystem is writable.
const defaultFlipFile = "/notserving"

// pollInterval is how often the server looks at the flip file.
const pollInterval = 100 * time.Millisecond

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "grpchealth:", err)
		os.Exit(1)
	}
}

// run dispatches the sub-commands; without one it serves.
func run(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "notserving", "serving":
			fset := flag.NewFlagSet(args[0], flag.ContinueOnError)
			flipFile := fset.String("flip-file", defaultFlipFile, "the file whose existence makes -service NOT_SERVING")
			if err := fset.Parse(args[1:]); err != nil {
				return err
			}
			if args[0] == "notserving" {
				return os.WriteFile(*flipFile, nil, 0o644)
			}
			if err := os.Remove(*flipFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
	}
	fset := flag.NewFlagSet("grpchealth", flag.ContinueOnError)
	port := fset.Int("port", 0, "TCP port to serve gRPC on (all addresses); required")
	service := fset.String("service", "", "the service name whose status follows -flip-file; required")
	flipFile := fset.String("flip-file", defaultFlipFile, "the file whose existence makes -service NOT_SERVING")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *port <= 0 || *port > 65535 {
		return fmt.Errorf("-port %d: must be 1-65535", *port)
	}
	if *service == "" {
		return errors.New("-service: required (the overall server \"\" is always SERVING)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serve(ctx, *port, *service, *flipFile)
}

// serve runs the health server until ctx ends.
func serve(ctx context.Context, port int, service, flipFile string) error {
	l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	current := status(flipFile)
	hs.SetServingStatus(service, current)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	fmt.Printf("serving grpc.health.v1.Health on :%d; %q follows %s\n", port, service, flipFile)
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			gs.Stop()
			<-served
			return nil
		case err := <-served:
			return err
		case <-ticker.C:
			if s := status(flipFile); s != current {
				current = s
				hs.SetServingStatus(service, s)
				fmt.Printf("%q is now %s\n", service, s)
			}
		}
	}
}

// status is NOT_SERVING while flipFile exists, SERVING otherwise.
func status(flipFile string) healthpb.HealthCheckResponse_ServingStatus {
	if _, err := os.Stat(flipFile); err == nil {
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	return healthpb.HealthCheckResponse_SERVING
}
