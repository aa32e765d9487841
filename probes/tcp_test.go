package probes

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

func TestTCPProbe(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	openPort := lis.Addr().(*net.TCPAddr).Port
	gone, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := gone.Addr().(*net.TCPAddr).Port
	gone.Close()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		port    int
		want    Result
		wantOut string
	}{
		{"listening is success", context.Background(), openPort, Success, ""},
		{"refused is failure with the error", context.Background(), closedPort, Failure, "connect: connection refused"},
		{"canceled is failure", canceled, openPort, Failure, "operation was canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out, err := TCPProbe(tt.ctx, "127.0.0.1", tt.port, time.Second)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if res != tt.want || !strings.Contains(out, tt.wantOut) {
				t.Errorf("got %q %q, want %q containing %q", res, out, tt.want, tt.wantOut)
			}
			if tt.want == Success {
				select {
				case <-accepted:
				case <-time.After(5 * time.Second):
					t.Error("the listener never accepted the probe's connection")
				}
			}
		})
	}
}
