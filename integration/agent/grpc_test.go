package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/integration/nodeenv"
	"berth/internal/testimages"
)

// grpcHealthPkg is the test's gRPC health server (see its doc comment): it
// serves grpc.health.v1.Health, and `/grpchealth notserving` / `serving`,
// run through ExecSync, flip its -service.
const grpcHealthPkg = "berth/integration/agent/grpchealth"

var (
	grpcImageOnce sync.Once
	grpcImageRef  string
	grpcImageErr  error
)

// grpcHealthImage builds grpchealth statically, packs it into a one-binary
// image and pushes it to the env's anonymous registry, once per package.
func grpcHealthImage(t testing.TB) string {
	t.Helper()
	grpcImageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		bin, err := testimages.BuildStatic(ctx, "", grpcHealthPkg)
		if err != nil {
			grpcImageErr = err
			return
		}
		img, err := testimages.BinaryImage("grpchealth", bin)
		if err != nil {
			grpcImageErr = err
			return
		}
		grpcImageRef, grpcImageErr = testimages.Push(ctx, nodeenv.Current().Registry, "berth/grpchealth:1", img)
	})
	if grpcImageErr != nil {
		t.Fatal(grpcImageErr)
	}
	return grpcImageRef
}

// grpcManifest is a one-container pod running grpchealth on port 9000 with
// the service berth.test.Ready, and the given probe YAML at the container's
// indentation.
func grpcManifest(image, name, probes string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: %s
    args: ["-port", "9000", "-service", "berth.test.Ready"]
%s`, name, image, probes)
}

// gRPC probes against a real gRPC health server in a container. Readiness
// on the served service follows its status both ways without restarts;
// liveness on a service the server does not know fails every check, so the
// container is killed and restarted again and again, counted.
func TestGRPCProbes(t *testing.T) {
	n := newNode(t, fastBackOff...)
	image := grpcHealthImage(t)
	n.start()
	n.write("grpcready.yaml", grpcManifest(image, "grpcready", `    readinessProbe:
      grpc:
        port: 9000
        service: berth.test.Ready
      periodSeconds: 1
      failureThreshold: 1
`))
	n.write("grpclive.yaml", grpcManifest(image, "grpclive", `    livenessProbe:
      grpc:
        port: 9000
        service: berth.test.NoSuchService
      periodSeconds: 1
      failureThreshold: 1
`))

	p := n.waitPod("grpcready-n1", "Ready", time.Minute, func(p *v1.Pod) bool { return isReady(p, "app", true) })
	n.exec(p, "app", "/grpchealth", "notserving")
	n.waitPod("grpcready-n1", "not Ready once the service is NOT_SERVING", 30*time.Second, func(p *v1.Pod) bool { return isReady(p, "app", false) })
	n.exec(p, "app", "/grpchealth", "serving")
	p = n.waitPod("grpcready-n1", "Ready again once it is SERVING", 30*time.Second, func(p *v1.Pod) bool { return isReady(p, "app", true) })
	if cs := containerStatus(p, "app"); cs.RestartCount != 0 {
		t.Errorf("readiness restarted the container: %+v", cs)
	}

	// The server never exits by itself: every restart is a liveness kill.
	// The pod has been running meanwhile, so wait for restarts seen happen:
	// at least two counted and a container other than the first one seen.
	seen := map[string]bool{}
	p = n.waitPod("grpclive-n1", "two restarts, one of them seen", 90*time.Second, func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		if cs.ContainerID != "" {
			seen[cs.ContainerID] = true
		}
		return cs.RestartCount >= 2 && len(seen) >= 2
	})
	if cs := containerStatus(p, "app"); cs.LastTerminationState.Terminated == nil {
		t.Errorf("no last termination state after liveness restarts: %+v", cs)
	}
	if p := n.pod("grpcready-n1"); p == nil || containerStatus(p, "app").RestartCount != 0 {
		t.Errorf("the pod whose liveness is not probed was restarted: %+v", p)
	}
	n.removeAllAndWait()
}
