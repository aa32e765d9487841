package cri_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
)

// A ListContainers answer above gRPC's default 4 MiB limit still arrives.
func TestListContainersBeyondDefaultMessageLimit(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	pc := podConfig("big")
	sb, err := c.RunPodSandbox(ctx, pc, "")
	if err != nil {
		t.Fatal(err)
	}
	const n = 160
	filler := strings.Repeat("x", 32<<10)
	if _, err := c.PullImage(ctx, "busybox", nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cfg := containerConfig(fmt.Sprintf("c%d", i), "busybox")
		cfg.Annotations = map[string]string{"filler": filler}
		if _, err := c.CreateContainer(ctx, sb, cfg, pc); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.ListContainers(ctx, nil)
	if err != nil {
		t.Fatalf("ListContainers of %d large containers: %v", n, err)
	}
	if len(got) != n {
		t.Fatalf("ListContainers = %d containers, want %d", len(got), n)
	}

	// The answer really is beyond the default limit: a default client fails.
	conn, err := grpc.NewClient(srv.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("ListContainers with gRPC's default limit = %v, want ResourceExhausted", err)
	}
}
