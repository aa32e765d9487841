package volumes

import (
	"context"
	"errors"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"berth/internal/errdefs"
)

// EventRecorder records Kubernetes events; client-go's
// record.EventRecorder satisfies it.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// The kubelet's volume operation back-off: 500ms, doubling, at most 2m2s.
const (
	// DefaultMountBackOffInitial is the wait after a volume's first failed set-up.
	DefaultMountBackOffInitial = 500 * time.Millisecond
	// DefaultMountBackOffMax caps the wait between set-up attempts.
	DefaultMountBackOffMax = 2*time.Minute + 2*time.Second
)

// ReasonFailedMount is the reason of the Warning event a failed volume
// set-up records on its pod.
const ReasonFailedMount = "FailedMount"

// mountFailure is a volume's last failed set-up and when it may be tried
// again.
type mountFailure struct {
	err   *MountError
	delay time.Duration
	next  time.Time
}

// setUpWithBackOff sets vol up unless its last attempt failed and its
// back-off has not passed (then that failure is returned again, without
// an event). A failure records a FailedMount event carrying the
// *MountError's message on the pod and doubles the volume's back-off.
func (m *Manager) setUpWithBackOff(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (mountedVolume, error) {
	key := string(pod.UID) + "/" + vol.Name
	now := m.cfg.Clock.Now()
	m.csi.mu.Lock()
	last := m.csi.backoff[key]
	m.csi.mu.Unlock()
	if last != nil && now.Before(last.next) {
		return mountedVolume{}, last.err
	}
	mv, err := m.setUpVolume(ctx, pod, vol, false)
	if err == nil {
		if last != nil {
			m.csi.mu.Lock()
			delete(m.csi.backoff, key)
			m.csi.mu.Unlock()
		}
		return mv, nil
	}
	merr := &MountError{Volume: vol.Name, Err: err}
	var op *csiOpError
	if errors.As(err, &op) {
		merr.Op, merr.Volume = op.op, op.volume
	}
	m.cfg.Logger.Debug("volume set-up failed", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID, "volume", vol.Name, "err", err)
	if m.cfg.Recorder != nil {
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, ReasonFailedMount, "%s", eventMessage(merr))
	}
	if m.cfg.MountBackOffInitial > 0 {
		delay := m.cfg.MountBackOffInitial
		if last != nil {
			delay = min(2*last.delay, m.cfg.MountBackOffMax)
		}
		m.csi.mu.Lock()
		if m.csi.backoff == nil {
			m.csi.backoff = map[string]*mountFailure{}
		}
		m.csi.backoff[key] = &mountFailure{err: merr, delay: delay, next: now.Add(delay)}
		m.csi.mu.Unlock()
	}
	return mountedVolume{}, merr
}

// forgetBackOff drops the pod's volume back-offs (the pod is torn down).
func (m *Manager) forgetBackOff(uid string) {
	m.csi.mu.Lock()
	defer m.csi.mu.Unlock()
	for key := range m.csi.backoff {
		if len(key) > len(uid) && key[:len(uid)] == uid && key[len(uid)] == '/' {
			delete(m.csi.backoff, key)
		}
	}
}

// errorClasses are errdefs' classes, whose texts a wrapped error's message
// carries (": not found").
var errorClasses = []error{
	errdefs.ErrNotFound, errdefs.ErrAlreadyExists, errdefs.ErrInvalidArgument, errdefs.ErrConflict, errdefs.ErrUnavailable,
	errdefs.ErrDeadlineExceeded, errdefs.ErrUnauthenticated, errdefs.ErrPermissionDenied, errdefs.ErrUnimplemented,
}

// eventMessage is err's message without the errdefs class texts wrapping
// added, worded as the kubelet's FailedMount events are: `MountVolume.SetUp
// failed for volume "cfg" : configmap "later" not found`. The classes stay
// in the error itself, for errors.Is.
func eventMessage(err error) string {
	msg := err.Error()
	for _, class := range errorClasses {
		if errors.Is(err, class) {
			msg = strings.ReplaceAll(msg, ": "+class.Error(), "")
		}
	}
	return msg
}
