package probes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/internal/errdefs"
)

func TestExecProbe(t *testing.T) {
	srv, client := newCRI(t)
	id := startContainers(t, client, 1)[0]
	long := strings.Repeat("x", 12<<10)

	tests := []struct {
		name    string
		cmd     []string
		handler func(ctx context.Context) ([]byte, []byte, int32, error)
		id      string
		want    Result
		wantOut string
		wantErr error
	}{
		{
			name: "exit 0 is success with output",
			cmd:  []string{"cat", "/tmp/healthy"},
			handler: func(context.Context) ([]byte, []byte, int32, error) {
				return []byte("ok\n"), nil, 0, nil
			},
			want: Success, wantOut: "ok\n",
		},
		{
			name: "non-zero exit is failure with stdout then stderr",
			cmd:  []string{"sh", "-c", "exit 3"},
			handler: func(context.Context) ([]byte, []byte, int32, error) {
				return []byte("out;"), []byte("err"), 3, nil
			},
			want: Failure, wantOut: "out;err",
		},
		{
			name: "output is cut at 10 KiB",
			cmd:  []string{"yes"},
			handler: func(context.Context) ([]byte, []byte, int32, error) {
				return []byte(long), []byte("tail"), 1, nil
			},
			want: Failure, wantOut: long[:10<<10],
		},
		{
			name: "timeout is failure: command timed out",
			cmd:  []string{"sleep", "10"},
			handler: func(ctx context.Context) ([]byte, []byte, int32, error) {
				<-ctx.Done()
				return nil, nil, 0, ctx.Err()
			},
			want: Failure, wantOut: `command "sleep 10" timed out`,
		},
		{
			name: "runtime error is unknown with the error",
			cmd:  []string{"true"},
			handler: func(context.Context) ([]byte, []byte, int32, error) {
				return nil, nil, 0, errors.New("cannot register an exec PID: container is stopping")
			},
			want: Unknown, wantErr: errors.New("cannot register an exec PID"),
		},
		{
			name: "unknown container is unknown, not found",
			cmd:  []string{"true"},
			id:   "no-such-container",
			want: Unknown, wantErr: errdefs.ErrNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotCmd []string
			srv.SetExecHandler(func(ctx context.Context, _ string, cmd []string) ([]byte, []byte, int32, error) {
				gotCmd = cmd
				if tt.handler == nil {
					return nil, nil, 0, nil
				}
				return tt.handler(ctx)
			})
			target := id
			if tt.id != "" {
				target = tt.id
			}
			res, out, err := ExecProbe(context.Background(), client, target, tt.cmd, time.Second)
			if res != tt.want {
				t.Errorf("result = %q, want %q (out %q, err %v)", res, tt.want, out, err)
			}
			if tt.want != Unknown && out != tt.wantOut {
				t.Errorf("output = %q (%d bytes), want %q (%d bytes)", short(out), len(out), short(tt.wantOut), len(tt.wantOut))
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.wantErr != nil && err == nil:
				t.Errorf("err = nil, want %v", tt.wantErr)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr) && !strings.Contains(err.Error(), tt.wantErr.Error()):
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.id == "" && strings.Join(gotCmd, " ") != strings.Join(tt.cmd, " ") {
				t.Errorf("runtime got cmd %q, want %q", gotCmd, tt.cmd)
			}
		})
	}

	t.Run("runtime deadline code is a timeout", func(t *testing.T) {
		srv.Inject("ExecSync", status.Error(codes.DeadlineExceeded, "timeout 1s exceeded"))
		defer srv.Clear("ExecSync")
		res, out, err := ExecProbe(context.Background(), client, id, []string{"true"}, time.Second)
		if res != Failure || out != `command "true" timed out` || err != nil {
			t.Errorf("got %q %q %v, want failure, command \"true\" timed out", res, out, err)
		}
	})
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
