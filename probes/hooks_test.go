package probes

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"berth/internal/errdefs"

	"berth/internal/version"
)

func hookPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
}

func TestHookExec(t *testing.T) {
	srv, client := newCRI(t)
	id := startContainers(t, client, 1)[0]
	h, err := NewHookRunner(HookConfig{Exec: client})
	if err != nil {
		t.Fatal(err)
	}
	c := &v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "MSG", Value: "hi"}}}
	target := Target{Container: c, ContainerID: "containerd://" + id}
	var gotCmd atomic.Value
	tests := []struct {
		name    string
		exec    func(ctx context.Context) ([]byte, []byte, int32, error)
		ctx     func() (context.Context, context.CancelFunc)
		wantMsg string
		wantErr error
	}{
		{
			name: "exit 0 succeeds",
			exec: func(context.Context) ([]byte, []byte, int32, error) { return []byte("done"), nil, 0, nil },
		},
		{
			name: "non-zero exit fails with the kubelet's message",
			exec: func(context.Context) ([]byte, []byte, int32, error) {
				return []byte("out "), []byte("boom"), 3, nil
			},
			wantMsg: `Exec lifecycle hook ([sh -c echo $(MSG); exit 3]) for Container "app" in Pod "web_default(uid-1)" failed - error: command 'sh -c echo hi; exit 3' exited with 3: boom, message: "out boom"`,
			wantErr: &ExitError{},
		},
		{
			name: "a hung hook is cut off by the deadline",
			exec: func(ctx context.Context) ([]byte, []byte, int32, error) {
				<-ctx.Done()
				return nil, nil, 0, ctx.Err()
			},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 300*time.Millisecond)
			},
			wantMsg: `Exec lifecycle hook ([sh -c echo $(MSG); exit 3]) for Container "app" in Pod "web_default(uid-1)" failed - error: exec in container ` + id,
			wantErr: errdefs.ErrDeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.SetExecHandler(func(ctx context.Context, _ string, cmd []string) ([]byte, []byte, int32, error) {
				gotCmd.Store(strings.Join(cmd, " "))
				return tt.exec(ctx)
			})
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			handler := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo $(MSG); exit 3"}}}
			msg, err := h.Run(ctx, hookPod(), target, handler)
			if tt.wantErr == nil {
				if err != nil || msg != "" {
					t.Fatalf("got %q %v, want success", msg, err)
				}
			} else {
				var exit *ExitError
				if _, isExit := tt.wantErr.(*ExitError); isExit && !errors.As(err, &exit) || !isExit && !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %T %v", err, tt.wantErr, tt.wantErr)
				}
				if !strings.HasPrefix(msg, tt.wantMsg) {
					t.Errorf("message:\n got %s\nwant %s", msg, tt.wantMsg)
				}
			}
			if got, _ := gotCmd.Load().(string); got != "sh -c echo hi; exit 3" {
				t.Errorf("ran %q", got)
			}
		})
	}
}

func TestHookHTTP(t *testing.T) {
	_, client := newCRI(t)
	var ua, path atomic.Value
	var hits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		ua.Store(r.Header.Get("User-Agent"))
		path.Store(r.URL.Path)
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
		case "/hang":
			<-r.Context().Done()
		}
	}))
	defer web.Close()
	host, port := hostPort(t, web.URL)
	gone, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := gone.Addr().(*net.TCPAddr).Port
	gone.Close()
	rec := record.NewFakeRecorder(10)
	h, err := NewHookRunner(HookConfig{Exec: client, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	target := Target{PodIP: host, Container: c}
	tests := []struct {
		name      string
		action    v1.HTTPGetAction
		wantMsg   string
		wantEvent string
	}{
		{"success", v1.HTTPGetAction{Path: "/prestop", Port: intstr.FromString("http")}, "", ""},
		{"status code is not judged", v1.HTTPGetAction{Path: "/fail", Port: intstr.FromString("http")}, "", ""},
		{"https answered in http falls back", v1.HTTPGetAction{Path: "/tls", Port: intstr.FromString("http"), Scheme: v1.URISchemeHTTPS}, "",
			"Warning LifecycleHTTPFallback request to HTTPS lifecycle hook " + net.JoinHostPort(host, itoa(port)) + " got HTTP response, retry with HTTP succeeded"},
		{"refused fails", v1.HTTPGetAction{Path: "/down", Port: intstr.FromInt32(int32(closedPort))},
			`HTTP lifecycle hook (/down) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "http://` + net.JoinHostPort(host, itoa(closedPort)) + `/down": dial tcp`, ""},
		{"unknown port name fails", v1.HTTPGetAction{Path: "/x", Port: intstr.FromString("nope")},
			`HTTP lifecycle hook (/x) for Container "app" in Pod "web_default(uid-1)" failed - error: httpGet: port "nope"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			msg, err := h.Run(context.Background(), hookPod(), target, &v1.LifecycleHandler{HTTPGet: &tt.action})
			if tt.wantMsg == "" {
				if err != nil || msg != "" {
					t.Fatalf("got %q %v, want success", msg, err)
				}
				if hits.Load() == before || path.Load() != tt.action.Path {
					t.Fatalf("the hook's request did not arrive")
				}
				if got := ua.Load(); got != "kube-lifecycle/"+version.KubernetesMinor() {
					t.Errorf("User-Agent = %q, want kube-lifecycle/%s", got, version.KubernetesMinor())
				}
			} else if err == nil || !strings.HasPrefix(msg, tt.wantMsg) {
				t.Errorf("got %q %v, want message starting %q", msg, err, tt.wantMsg)
			}
			select {
			case ev := <-rec.Events:
				if ev != tt.wantEvent {
					t.Errorf("event = %q, want %q", ev, tt.wantEvent)
				}
			default:
				if tt.wantEvent != "" {
					t.Errorf("no event, want %q", tt.wantEvent)
				}
			}
		})
	}
}

func TestHookHTTPCutOffByDeadline(t *testing.T) {
	_, client := newCRI(t)
	web := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer web.Close()
	host, port := hostPort(t, web.URL)
	h, err := NewHookRunner(HookConfig{Exec: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	msg, err := h.Run(ctx, hookPod(), Target{PodIP: host, Container: &v1.Container{Name: "app"}},
		&v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/prestop", Port: intstr.FromInt32(int32(port))}})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(msg, `HTTP lifecycle hook (/prestop) for Container "app" in Pod "web_default(uid-1)" failed - error: Get`) {
		t.Errorf("got %q %v, want the deadline", msg, err)
	}
}

func TestHookSleep(t *testing.T) {
	_, client := newCRI(t)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h, err := NewHookRunner(HookConfig{Exec: client, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	handler := &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}

	t.Run("returns after the seconds", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := h.Run(context.Background(), hookPod(), Target{Container: &v1.Container{Name: "app"}}, handler)
			done <- err
		}()
		waitWaiters(t, clk)
		clk.Step(4 * time.Second)
		select {
		case err := <-done:
			t.Fatalf("returned after 4s of 5: %v", err)
		default:
		}
		clk.Step(time.Second)
		if err := <-done; err != nil {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("cut off by the grace period", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var msg string
		var err error
		go func() {
			defer close(done)
			msg, err = h.Run(ctx, hookPod(), Target{Container: &v1.Container{Name: "app"}}, handler)
		}()
		waitWaiters(t, clk)
		cancel()
		<-done
		want := `Sleep lifecycle hook (5) for Container "app" in Pod "web_default(uid-1)" failed - error: container terminated before sleep hook finished`
		if !errors.Is(err, ErrSleepInterrupted) || msg != want {
			t.Errorf("got %q %v, want %q", msg, err, want)
		}
	})
	t.Run("zero seconds returns at once", func(t *testing.T) {
		if msg, err := h.Run(context.Background(), hookPod(), Target{}, &v1.LifecycleHandler{Sleep: &v1.SleepAction{}}); err != nil || msg != "" {
			t.Fatalf("got %q %v", msg, err)
		}
	})
}

func TestHookInvalid(t *testing.T) {
	_, client := newCRI(t)
	h, err := NewHookRunner(HookConfig{Exec: client})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := h.Run(context.Background(), hookPod(), Target{}, &v1.LifecycleHandler{})
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.HasPrefix(msg, "Cannot run handler: invalid handler") {
		t.Errorf("got %q %v", msg, err)
	}
	if _, err := NewHookRunner(HookConfig{}); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "Exec") {
		t.Errorf("NewHookRunner without Exec: %v", err)
	}
}

// waitWaiters waits until something waits on the fake clock.
func waitWaiters(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("nothing waits on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
