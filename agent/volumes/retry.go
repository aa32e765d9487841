package volumes

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// RetryAt is when SetUp will next try a volume of the pod uid whose set-up
// failed: the earliest end of their back-offs (MountBackOffInitial,
// doubling). It is zero when none of the pod's volumes waits out a
// back-off: none failed, or the back-off is off (MountBackOffInitial 0).
func (m *Manager) RetryAt(uid types.UID) time.Time {
	prefix := string(uid) + "/"
	m.csi.mu.Lock()
	defer m.csi.mu.Unlock()
	var at time.Time
	for key, f := range m.csi.backoff {
		if strings.HasPrefix(key, prefix) && (at.IsZero() || f.next.Before(at)) {
			at = f.next
		}
	}
	return at
}
