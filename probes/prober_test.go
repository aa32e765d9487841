package probes

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/internal/errdefs"
)

func TestProberDispatch(t *testing.T) {
	srv, client := newCRI(t)
	id := startContainers(t, client, 1)[0]
	var mu sync.Mutex
	var gotCmd []string
	var gotID string
	srv.SetExecHandler(func(_ context.Context, cid string, cmd []string) ([]byte, []byte, int32, error) {
		mu.Lock()
		defer mu.Unlock()
		gotCmd, gotID = cmd, cid
		return []byte("ran"), nil, 0, nil
	})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("up")) }))
	defer web.Close()
	_, webPort := hostPort(t, web.URL)
	hs := health.NewServer()
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	grpcPort := serveGRPC(t, gs)
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tcpPort := lis.Addr().(*net.TCPAddr).Port

	container := &v1.Container{
		Name:  "app",
		Env:   []v1.EnvVar{{Name: "FILE", Value: "/tmp/ready"}},
		Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(webPort)}, {Name: "tcp", ContainerPort: int32(tcpPort)}},
	}
	target := Target{PodIP: "127.0.0.1", Container: container, ContainerID: "containerd://" + id}
	pr := NewProber(client, nil)
	tests := []struct {
		name    string
		handler v1.ProbeHandler
		target  Target
		want    Result
		wantOut string
		wantErr error
	}{
		{"exec with $(VAR) from env and the runtime ID", v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "$(FILE)"}}}, target, Success, "ran", nil},
		{"httpGet by port name", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("web")}}, target, Success, "up", nil},
		{"tcpSocket by port name", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("tcp")}}, target, Success, "", nil},
		{"grpc", v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(grpcPort)}}, target, Success, "service healthy", nil},
		{"tcpSocket with an unknown port name errors", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("nope")}}, target, Unknown, "", errdefs.ErrInvalidArgument},
		{"httpGet without a pod IP errors", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}, Target{Container: container}, Unknown, "", errdefs.ErrUnavailable},
		{"grpc without a pod IP errors", v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 80}}, Target{Container: container}, Unknown, "", errdefs.ErrUnavailable},
		{"no handler errors", v1.ProbeHandler{}, target, Unknown, "", errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out, err := pr.Probe(context.Background(), &v1.Probe{ProbeHandler: tt.handler, TimeoutSeconds: 1}, tt.target)
			if res != tt.want || out != tt.wantOut {
				t.Errorf("got %q %q (err %v), want %q %q", res, out, err, tt.want, tt.wantOut)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(gotCmd, " ") != "cat /tmp/ready" || gotID != id {
		t.Errorf("exec ran %q in %q, want \"cat /tmp/ready\" in %q", gotCmd, gotID, id)
	}
}
