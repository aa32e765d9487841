package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"berth/cri"
	"berth/internal/errdefs"
)

// Upstream's image back-off.
const (
	DefaultInitialBackOff = 10 * time.Second
	DefaultMaxBackOff     = 5 * time.Minute
)

// The waiting reasons a container gets when its image is not ready; each
// Error unwraps to one of them.
var (
	ErrImagePull                 = errors.New("ErrImagePull")
	ErrImagePullBackOff          = errors.New("ImagePullBackOff")
	ErrImageNeverPull            = errors.New("ErrImageNeverPull")
	ErrInvalidImageName          = errors.New("InvalidImageName")
	ErrImageInspect              = errors.New("ImageInspectError")
	ErrRegistryUnavailable       = errors.New("RegistryUnavailable")
	ErrSignatureValidationFailed = errors.New("SignatureValidationFailed")
)

// Event reasons, as the kubelet records them.
const (
	EventPulling     = "Pulling"
	EventPulled      = "Pulled"
	EventFailed      = "Failed"
	EventBackOff     = "BackOff"
	EventInspectFail = "InspectFailed"
	EventNeverPull   = "ErrImageNeverPull"
)

// ImageService is the part of the CRI image service the puller uses;
// *cri.Client satisfies it.
type ImageService interface {
	PullImage(ctx context.Context, image string, auth *runtimeapi.AuthConfig, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error)
	ImageStatus(ctx context.Context, image string) (*runtimeapi.Image, error)
}

var _ ImageService = (*cri.Client)(nil)

// Config configures a Puller.
type Config struct {
	// Images is the runtime's image service; required.
	Images ImageService
	// Clock times back-offs and pulls; default the real clock.
	Clock clock.PassiveClock
	// InitialBackOff is the delay after a first failed pull; default 10 s.
	InitialBackOff time.Duration
	// MaxBackOff caps the doubling delay; default 5 min.
	MaxBackOff time.Duration
}

// Puller ensures images are present. It is safe for concurrent use.
type Puller struct {
	images  ImageService
	clock   clock.PassiveClock
	backOff *backOff

	mu          sync.Mutex
	lastFailure map[string]string // back-off key → "<reason>: <message>" of the last failed pull
}

// NewPuller validates cfg and returns a Puller.
func NewPuller(cfg Config) (*Puller, error) {
	if cfg.Images == nil {
		return nil, fmt.Errorf("images.Config.Images is required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.InitialBackOff < 0 || cfg.MaxBackOff < 0 {
		return nil, fmt.Errorf("images.Config: back-off durations must not be negative: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.InitialBackOff == 0 {
		cfg.InitialBackOff = DefaultInitialBackOff
	}
	if cfg.MaxBackOff == 0 {
		cfg.MaxBackOff = DefaultMaxBackOff
	}
	if cfg.MaxBackOff < cfg.InitialBackOff {
		return nil, fmt.Errorf("images.Config: MaxBackOff %s is below InitialBackOff %s: %w", cfg.MaxBackOff, cfg.InitialBackOff, errdefs.ErrInvalidArgument)
	}
	return &Puller{
		images:      cfg.Images,
		clock:       cfg.Clock,
		backOff:     newBackOff(cfg.InitialBackOff, cfg.MaxBackOff),
		lastFailure: map[string]string{},
	}, nil
}

// Request asks for one container's image.
type Request struct {
	// PodUID keys the back-off together with the image, as upstream does.
	PodUID types.UID
	// Image is the container's image as written in the spec.
	Image string
	// PullPolicy is the container's imagePullPolicy; empty means the
	// default for the image's tag (see DefaultPullPolicy).
	PullPolicy v1.PullPolicy
	// Credentials are tried in order until a pull succeeds; none pulls
	// anonymously. They are never logged nor put in messages.
	Credentials []*runtimeapi.AuthConfig
	// SandboxConfig is the pod's sandbox config, passed to the runtime.
	SandboxConfig *runtimeapi.PodSandboxConfig
}

// Event is an event the caller should record on the container's pod.
type Event struct {
	// Type is v1.EventTypeNormal or v1.EventTypeWarning.
	Type    string
	Reason  string
	Message string
}

// Result is the outcome of EnsureImage.
type Result struct {
	// ImageRef is the runtime's reference for the image (its ID) on success.
	ImageRef string
	// Events are the events to record, in order, on success and failure.
	Events []Event
	// PullDuration is how long a successful pull took (0 when none was made).
	PullDuration time.Duration
	// Size is the pulled image's size in bytes (0 when unknown or no pull).
	Size uint64
}

// Error is why an image is not ready: the container's waiting reason and
// message. It unwraps to the reason's sentinel (ErrImagePull, …) and to the
// runtime's error when there is one.
type Error struct {
	// Reason is the waiting reason, e.g. "ErrImagePull".
	Reason string
	// Message is the waiting message, with the runtime's error.
	Message string
	// RetryAfter is, for ImagePullBackOff, how long the back-off still runs.
	RetryAfter time.Duration

	sentinel error
	cause    error
}

// Error formats as "<Reason>: <Message>".
func (e *Error) Error() string { return e.Reason + ": " + e.Message }

// Unwrap returns the reason's sentinel and the cause.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.sentinel, e.cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func newError(sentinel error, message string, cause error) *Error {
	return &Error{Reason: sentinel.Error(), Message: message, sentinel: sentinel, cause: cause}
}

// EnsureImage makes sure req's image is present, pulling it as its policy
// says unless the pod's back-off for it still runs. On success it returns the
// image reference for CreateContainer; on failure an *Error with the
// container's waiting reason and message. Either way Result.Events lists the
// events the kubelet would record.
func (p *Puller) EnsureImage(ctx context.Context, req Request) (Result, error) {
	var res Result
	event := func(typ, reason, msg string) { res.Events = append(res.Events, Event{typ, reason, msg}) }

	image, err := WithDefaultTag(req.Image)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", req.Image, err)
		event(v1.EventTypeWarning, EventInspectFail, msg)
		return res, newError(ErrInvalidImageName, msg, err)
	}
	policy := req.PullPolicy
	if policy == "" {
		policy = DefaultPullPolicy(req.Image)
	}
	switch policy {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	default:
		err := fmt.Errorf("imagePullPolicy: unsupported value %q (want Always, IfNotPresent or Never): %w", policy, errdefs.ErrInvalidArgument)
		return res, newError(ErrImagePull, err.Error(), err)
	}

	if policy != v1.PullAlways {
		present, err := p.images.ImageStatus(ctx, image)
		if err != nil {
			msg := fmt.Sprintf("Failed to inspect image %q: %v", req.Image, err)
			event(v1.EventTypeWarning, EventInspectFail, msg)
			return res, newError(ErrImageInspect, msg, err)
		}
		if present != nil {
			event(v1.EventTypeNormal, EventPulled, fmt.Sprintf("Container image %q already present on machine", req.Image))
			res.ImageRef = present.Id
			return res, nil
		}
		if policy == v1.PullNever {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", req.Image)
			event(v1.EventTypeWarning, EventNeverPull, msg)
			return res, newError(ErrImageNeverPull, msg, nil)
		}
	}

	key := string(req.PodUID) + "_" + req.Image
	now := p.clock.Now()
	if waiting, left := p.backOff.inBackOff(key, now); waiting {
		msg := fmt.Sprintf("Back-off pulling image %q", req.Image)
		event(v1.EventTypeNormal, EventBackOff, msg)
		p.mu.Lock()
		if prev, ok := p.lastFailure[key]; ok {
			msg += ": " + prev
		}
		p.mu.Unlock()
		e := newError(ErrImagePullBackOff, msg, nil)
		e.RetryAfter = left
		return res, e
	}

	event(v1.EventTypeNormal, EventPulling, fmt.Sprintf("Pulling image %q", req.Image))
	start := p.clock.Now()
	ref, err := p.pull(ctx, image, req)
	if err != nil {
		event(v1.EventTypeWarning, EventFailed, fmt.Sprintf("Failed to pull image %q: %s", req.Image, runtimeMessage(err)))
		if ctx.Err() != nil {
			// Abandoned by the caller (pod gone, agent stopping): no back-off.
			return res, newError(ErrImagePull, runtimeMessage(err), err)
		}
		p.backOff.next(key, p.clock.Now())
		e := classifyPullError(req.Image, err)
		p.mu.Lock()
		p.lastFailure[key] = e.Reason + ": " + e.Message
		p.mu.Unlock()
		return res, e
	}
	res.PullDuration = p.clock.Since(start).Truncate(time.Millisecond)
	if st, err := p.images.ImageStatus(ctx, ref); err == nil && st != nil {
		res.Size = st.Size
	}
	event(v1.EventTypeNormal, EventPulled, fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.",
		req.Image, res.PullDuration, res.PullDuration, res.Size))
	res.ImageRef = ref
	p.mu.Lock()
	delete(p.lastFailure, key)
	p.mu.Unlock()
	p.backOff.gc(p.clock.Now())
	return res, nil
}

// pull pulls image anonymously, or with each credential in turn until one
// works; the errors of all attempts are joined in order.
func (p *Puller) pull(ctx context.Context, image string, req Request) (string, error) {
	if len(req.Credentials) == 0 {
		return p.images.PullImage(ctx, image, nil, req.SandboxConfig)
	}
	var errs []error
	for _, auth := range req.Credentials {
		ref, err := p.images.PullImage(ctx, image, auth, req.SandboxConfig)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", &pullErrors{errs: errs}
}

// pullErrors are the failures of every credential tried.
type pullErrors struct{ errs []error }

// Error is the one runtime message, or all of them in brackets as upstream
// aggregates them.
func (e *pullErrors) Error() string {
	if len(e.errs) == 1 {
		return runtimeMessage(e.errs[0])
	}
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = runtimeMessage(err)
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// Unwrap returns every attempt's error.
func (e *pullErrors) Unwrap() []error { return e.errs }

// runtimeMessage renders a runtime error as the kubelet shows it: for a CRI
// call, "rpc error: code = <code> desc = <runtime's message>".
func runtimeMessage(err error) string {
	var ce *cri.Error
	var pe *pullErrors
	switch {
	case errors.As(err, &pe):
		return pe.Error()
	case errors.As(err, &ce):
		return fmt.Sprintf("rpc error: code = %s desc = %s", ce.Code, ce.Message)
	}
	return err.Error()
}

// classifyPullError turns a failed pull into the container's waiting reason
// and message. CRI has no status codes for an unavailable registry or a
// failed signature check: runtimes signal them by starting the message with
// the reason's name (k8s.io/cri-api/pkg/errors), which is checked here; all
// else is ErrImagePull with the runtime's message.
func classifyPullError(image string, err error) *Error {
	var ce *cri.Error
	if errors.As(err, &ce) {
		for _, special := range []struct {
			sentinel error
			what     string
		}{
			{ErrRegistryUnavailable, "the registry is unavailable"},
			{ErrSignatureValidationFailed, "the signature validation failed"},
		} {
			if rest, ok := strings.CutPrefix(ce.Message, special.sentinel.Error()); ok {
				return newError(special.sentinel, fmt.Sprintf("image pull failed for %s because %s%s", image, special.what, rest), err)
			}
		}
	}
	return newError(ErrImagePull, runtimeMessage(err), err)
}
