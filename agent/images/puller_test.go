package images

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

type env struct {
	srv    *critest.Server
	client *cri.Client
	clock  *testingclock.FakeClock
	puller *Puller
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := critest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := cri.New(ctx, cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		t.Fatalf("cri.New: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	clk := testingclock.NewFakeClock(t0)
	p, err := NewPuller(Config{Images: client, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, client: client, clock: clk, puller: p}
}

func (e *env) ensure(t *testing.T, req Request) (Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if req.PodUID == "" {
		req.PodUID = "pod-1"
	}
	return e.puller.EnsureImage(ctx, req)
}

func reasons(events []Event) string {
	var r []string
	for _, e := range events {
		r = append(r, e.Type+"/"+e.Reason)
	}
	return strings.Join(r, ",")
}

func asError(t *testing.T, err error, sentinel error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, sentinel) || e.Reason != sentinel.Error() {
		t.Fatalf("err = %v, want *Error with reason %s", err, sentinel)
	}
	return e
}

func TestPolicies(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		policy    v1.PullPolicy
		preloaded bool
		inReg     bool
		pulls     int
		events    string
		wantErr   error
	}{
		{"IfNotPresent, present: no pull", "busybox:1.36", v1.PullIfNotPresent, true, true, 0, "Normal/Pulled", nil},
		{"IfNotPresent, absent: pull", "busybox:1.36", v1.PullIfNotPresent, false, true, 1, "Normal/Pulling,Normal/Pulled", nil},
		{"Always, present: pull anyway", "busybox:1.36", v1.PullAlways, true, true, 1, "Normal/Pulling,Normal/Pulled", nil},
		{"Never, present", "busybox:1.36", v1.PullNever, true, true, 0, "Normal/Pulled", nil},
		{"Never, absent", "busybox:1.36", v1.PullNever, false, true, 0, "Warning/ErrImageNeverPull", ErrImageNeverPull},
		{"default for untagged is Always", "busybox", "", true, true, 1, "Normal/Pulling,Normal/Pulled", nil},
		{"default for :latest is Always", "busybox:latest", "", true, true, 1, "Normal/Pulling,Normal/Pulled", nil},
		{"default for other tags is IfNotPresent", "busybox:1.36", "", true, true, 0, "Normal/Pulled", nil},
		{"missing image", "nope:1.0", v1.PullIfNotPresent, false, false, 1, "Normal/Pulling,Warning/Failed", ErrImagePull},
		{"invalid name", "Busybox:1.0", v1.PullIfNotPresent, false, false, 0, "Warning/InspectFailed", ErrInvalidImageName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var id string
			switch {
			case tt.preloaded:
				id = e.srv.PreloadImage(tt.image)
			case tt.inReg:
				id = e.srv.AddImage(tt.image)
			}
			res, err := e.ensure(t, Request{Image: tt.image, PullPolicy: tt.policy})
			if got := e.srv.Calls("PullImage"); got != tt.pulls {
				t.Errorf("PullImage calls = %d, want %d", got, tt.pulls)
			}
			if got := reasons(res.Events); got != tt.events {
				t.Errorf("events = %s, want %s (%v)", got, tt.events, res.Events)
			}
			if tt.wantErr != nil {
				asError(t, err, tt.wantErr)
				if res.ImageRef != "" {
					t.Errorf("ImageRef = %q on failure", res.ImageRef)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureImage: %v", err)
			}
			if res.ImageRef != id {
				t.Errorf("ImageRef = %q, want the image ID %q", res.ImageRef, id)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	e := newEnv(t)
	id := e.srv.AddImage("127.0.0.1:5000/app:v1")
	res, err := e.ensure(t, Request{Image: "127.0.0.1:5000/app:v1"})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := e.client.ImageStatus(context.Background(), id)
	if st == nil || st.Size == 0 || res.Size != st.Size {
		t.Fatalf("Size = %d, runtime says %v", res.Size, st)
	}
	want := []Event{
		{v1.EventTypeNormal, "Pulling", `Pulling image "127.0.0.1:5000/app:v1"`},
		{v1.EventTypeNormal, "Pulled", `Successfully pulled image "127.0.0.1:5000/app:v1" in 0s (0s including waiting). Image size: ` +
			strconv.FormatUint(st.Size, 10) + ` bytes.`},
	}
	if len(res.Events) != 2 || res.Events[0] != want[0] || res.Events[1] != want[1] {
		t.Fatalf("events = %#v\nwant %#v", res.Events, want)
	}
	res, err = e.ensure(t, Request{Image: "127.0.0.1:5000/app:v1"})
	if err != nil || len(res.Events) != 1 || res.Events[0].Message != `Container image "127.0.0.1:5000/app:v1" already present on machine` {
		t.Fatalf("second ensure: %v, %v", res.Events, err)
	}

	_, err = e.ensure(t, Request{Image: "127.0.0.1:5000/app:v2", PullPolicy: v1.PullNever})
	if got := asError(t, err, ErrImageNeverPull).Message; got != `Container image "127.0.0.1:5000/app:v2" is not present with pull policy of Never` {
		t.Fatalf("never-pull message = %q", got)
	}
}

// A missing image: ErrImagePull with the runtime's message, then
// ImagePullBackOff without a pull until the back-off (10 s, doubling to 5 min)
// runs out; then a new pull.
func TestBackOff(t *testing.T) {
	e := newEnv(t)
	const image = "127.0.0.1:5000/missing:1"
	_, err := e.ensure(t, Request{Image: image})
	pe := asError(t, err, ErrImagePull)
	wantMsg := `rpc error: code = NotFound desc = failed to pull and unpack image "127.0.0.1:5000/missing:1"`
	if !strings.HasPrefix(pe.Message, wantMsg) || !strings.Contains(pe.Message, "not found") {
		t.Fatalf("ErrImagePull message = %q, want the runtime's error", pe.Message)
	}
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("err %v does not unwrap to the runtime's NotFound", err)
	}

	wantDelays := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i, delay := range wantDelays {
		pulls := e.srv.Calls("PullImage")
		// Just before the delay ends: back-off, no pull.
		e.clock.Step(delay - time.Second)
		res, err := e.ensure(t, Request{Image: image})
		be := asError(t, err, ErrImagePullBackOff)
		if want := `Back-off pulling image "` + image + `": ErrImagePull: ` + pe.Message; be.Message != want {
			t.Fatalf("failure %d: back-off message = %q, want %q", i+1, be.Message, want)
		}
		if be.RetryAfter != time.Second {
			t.Fatalf("failure %d: RetryAfter = %s, want 1s", i+1, be.RetryAfter)
		}
		if reasons(res.Events) != "Normal/BackOff" || e.srv.Calls("PullImage") != pulls {
			t.Fatalf("failure %d: events %v, pulls %d→%d", i+1, res.Events, pulls, e.srv.Calls("PullImage"))
		}
		// At the end of the delay: a new pull, which fails again.
		e.clock.Step(time.Second)
		_, err = e.ensure(t, Request{Image: image})
		asError(t, err, ErrImagePull)
		if e.srv.Calls("PullImage") != pulls+1 {
			t.Fatalf("failure %d: no new pull after %s", i+1, delay)
		}
	}

	// Another pod pulling the same image has its own back-off.
	if _, err := e.ensure(t, Request{PodUID: "pod-2", Image: image}); !errors.Is(err, ErrImagePull) {
		t.Fatalf("pod-2: %v, want a pull (ErrImagePull)", err)
	}

	// The image appears in the registry: the pull after the back-off works.
	id := e.srv.AddImage(image)
	if _, err := e.ensure(t, Request{Image: image}); !errors.Is(err, ErrImagePullBackOff) {
		t.Fatalf("during back-off: %v", err)
	}
	e.clock.Step(300 * time.Second)
	res, err := e.ensure(t, Request{Image: image})
	if err != nil || res.ImageRef != id {
		t.Fatalf("after back-off: %v, %v", res, err)
	}
}

// After more than twice the maximum without failures, a failure starts the
// back-off from 10 s again.
func TestBackOffResetsAfterQuietPeriod(t *testing.T) {
	e := newEnv(t)
	const image = "127.0.0.1:5000/missing:1"
	for i := 0; i < 4; i++ { // 10, 20, 40, 80
		_, _ = e.ensure(t, Request{Image: image})
		e.clock.Step(90 * time.Second)
	}
	e.clock.Step(10 * time.Minute)
	_, err := e.ensure(t, Request{Image: image})
	asError(t, err, ErrImagePull)
	e.clock.Step(10 * time.Second)
	if _, err := e.ensure(t, Request{Image: image}); !errors.Is(err, ErrImagePull) {
		t.Fatalf("10 s after a failure following a quiet period: %v, want a new pull", err)
	}
}

func TestCredentials(t *testing.T) {
	const image = "127.0.0.1:5001/private/app:1"
	wrong := &runtimeapi.AuthConfig{Username: "alice", Password: "not-it-3141"}
	right := &runtimeapi.AuthConfig{Username: "berth", Password: "s3cr3t-pw"}

	t.Run("first working credential wins", func(t *testing.T) {
		e := newEnv(t)
		id := e.srv.AddPrivateImage(image, "berth", "s3cr3t-pw")
		res, err := e.ensure(t, Request{Image: image, Credentials: []*runtimeapi.AuthConfig{wrong, right, wrong}})
		if err != nil || res.ImageRef != id {
			t.Fatalf("EnsureImage = %v, %v", res, err)
		}
		if got := e.srv.Calls("PullImage"); got != 2 {
			t.Fatalf("PullImage calls = %d, want 2 (wrong, then right)", got)
		}
	})
	t.Run("auth field", func(t *testing.T) {
		e := newEnv(t)
		e.srv.AddPrivateImage(image, "berth", "s3cr3t-pw")
		auth := &runtimeapi.AuthConfig{Auth: "YmVydGg6czNjcjN0LXB3"} // base64("berth:s3cr3t-pw")
		if _, err := e.ensure(t, Request{Image: image, Credentials: []*runtimeapi.AuthConfig{auth}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("anonymous pull refused", func(t *testing.T) {
		e := newEnv(t)
		e.srv.AddPrivateImage(image, "berth", "s3cr3t-pw")
		_, err := e.ensure(t, Request{Image: image})
		if pe := asError(t, err, ErrImagePull); !strings.Contains(pe.Message, "401 Unauthorized") {
			t.Fatalf("message = %q", pe.Message)
		}
	})
	t.Run("all credentials fail: every error, no secret", func(t *testing.T) {
		e := newEnv(t)
		e.srv.AddPrivateImage(image, "berth", "s3cr3t-pw")
		other := &runtimeapi.AuthConfig{Username: "bob", Password: "hunter2-xyz"}
		res, err := e.ensure(t, Request{Image: image, Credentials: []*runtimeapi.AuthConfig{wrong, other}})
		pe := asError(t, err, ErrImagePull)
		if !strings.HasPrefix(pe.Message, "[rpc error: code = Unknown desc = ") || strings.Count(pe.Message, "401 Unauthorized") != 2 {
			t.Fatalf("message = %q, want both runtime errors in brackets", pe.Message)
		}
		all := err.Error()
		for _, ev := range res.Events {
			all += ev.Message
		}
		for _, secret := range []string{"not-it-3141", "hunter2-xyz", "alice", "bob"} {
			if strings.Contains(all, secret) {
				t.Fatalf("credential %q leaked into %q", secret, all)
			}
		}
	})
}

func TestRuntimeFailures(t *testing.T) {
	t.Run("registry unavailable", func(t *testing.T) {
		e := newEnv(t)
		e.srv.Inject("PullImage", status.Error(codes.Unknown, "RegistryUnavailable: dial tcp 127.0.0.1:5000: connection refused"))
		_, err := e.ensure(t, Request{Image: "127.0.0.1:5000/app:1"})
		re := asError(t, err, ErrRegistryUnavailable)
		if want := "image pull failed for 127.0.0.1:5000/app:1 because the registry is unavailable: dial tcp 127.0.0.1:5000: connection refused"; re.Message != want {
			t.Fatalf("message = %q, want %q", re.Message, want)
		}
	})
	t.Run("signature validation", func(t *testing.T) {
		e := newEnv(t)
		e.srv.Inject("PullImage", status.Error(codes.Unknown, "SignatureValidationFailed: unsigned"))
		_, err := e.ensure(t, Request{Image: "app:1"})
		if re := asError(t, err, ErrSignatureValidationFailed); re.Message != "image pull failed for app:1 because the signature validation failed: unsigned" {
			t.Fatalf("message = %q", re.Message)
		}
	})
	t.Run("image status fails", func(t *testing.T) {
		e := newEnv(t)
		e.srv.Inject("ImageStatus", status.Error(codes.Internal, "boltdb is on fire"))
		res, err := e.ensure(t, Request{Image: "app:1", PullPolicy: v1.PullIfNotPresent})
		ie := asError(t, err, ErrImageInspect)
		if !strings.Contains(ie.Message, `Failed to inspect image "app:1"`) || !strings.Contains(ie.Message, "boltdb is on fire") {
			t.Fatalf("message = %q", ie.Message)
		}
		if reasons(res.Events) != "Warning/InspectFailed" || e.srv.Calls("PullImage") != 0 {
			t.Fatalf("events %v, pulls %d", res.Events, e.srv.Calls("PullImage"))
		}
	})
	t.Run("caller gives up: no back-off", func(t *testing.T) {
		e := newEnv(t)
		e.srv.AddImage("app:1")
		release := make(chan struct{})
		defer close(release)
		arrived := e.srv.Delay("PullImage", release)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := e.puller.EnsureImage(ctx, Request{PodUID: "p", Image: "app:1", PullPolicy: v1.PullAlways})
			done <- err
		}()
		<-arrived
		cancel()
		if err := <-done; !errors.Is(err, ErrImagePull) {
			t.Fatalf("err = %v", err)
		}
		e.srv.Clear("PullImage")
		if _, err := e.ensure(t, Request{PodUID: "p", Image: "app:1", PullPolicy: v1.PullAlways}); err != nil {
			t.Fatalf("retry after a cancelled pull: %v, want an immediate pull", err)
		}
	})
}

func TestNewPullerValidates(t *testing.T) {
	if _, err := NewPuller(Config{}); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "Images") {
		t.Errorf("no Images: %v", err)
	}
	e := newEnv(t)
	if _, err := NewPuller(Config{Images: e.client, InitialBackOff: time.Minute, MaxBackOff: time.Second}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("max below initial: %v", err)
	}
	if _, err := NewPuller(Config{Images: e.client, InitialBackOff: -time.Second}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("negative: %v", err)
	}
	if _, err := e.ensure(t, Request{Image: "app:1", PullPolicy: "Sometimes"}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("bad policy: %v", err)
	}
}
