package tokencleaner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/authentication"
)

func TestExpiry(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	token := func(expiration string) *corev1.Secret {
		s := &corev1.Secret{Type: authentication.BootstrapTokenSecretType, Data: map[string][]byte{}}
		if expiration != "" {
			s.Data[authentication.BootstrapTokenExpirationKey] = []byte(expiration)
		}
		return s
	}
	deleting := token("2026-11-27T11:00:00Z")
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	other := token("2026-11-27T11:00:00Z")
	other.Type = corev1.SecretTypeOpaque
	for _, tc := range []struct {
		name        string
		secret      *corev1.Secret
		wantExpired bool
		wantWait    time.Duration
	}{
		{"no expiration: kept for ever", token(""), false, 0},
		{"expires in an hour", token("2026-11-27T13:00:00Z"), false, time.Hour},
		{"expired an hour ago", token("2026-11-27T11:00:00Z"), true, 0},
		{"expires this very second", token("2026-11-27T12:00:00Z"), true, 0},
		{"other time zone, same instant rule", token("2026-11-27T13:30:00+01:00"), false, 30 * time.Minute},
		{"unparseable: expired, as upstream", token("tomorrow"), true, 0},
		{"not a bootstrap token", other, false, 0},
		{"already being deleted", deleting, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expired, wait := Expiry(tc.secret, now)
			if expired != tc.wantExpired || wait != tc.wantWait {
				t.Fatalf("Expiry = %v, %s; want %v, %s", expired, wait, tc.wantExpired, tc.wantWait)
			}
		})
	}
}
