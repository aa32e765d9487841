package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// namespaceTerminating is the apiserver's refusal to create in a
// namespace being deleted: Forbidden with the NamespaceTerminating cause.
func namespaceTerminating() error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-x", errors.New("unable to create new content in namespace t because it is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace t is being terminated", Field: "metadata.namespace"}}
	return err
}

// TestProcessNextDropsKeysOfTerminatingNamespaces: a sync that fails
// because its namespace is terminating is not retried (it spun while the
// namespace was being deleted, each retry failing the same way); any other
// failure is requeued with back-off, and success forgets the key.
func TestProcessNextDropsKeysOfTerminatingNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name         string
		err          error
		wantRequeues int
	}{
		{"success", nil, 0},
		{"namespace terminating", namespaceTerminating(), 0},
		{"namespace terminating, wrapped", fmt.Errorf("create replicaset web-1: %w", namespaceTerminating()), 0},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "replicasets"}, "web-1", errors.New("modified")), 1},
		{"forbidden without the cause", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-x", errors.New("denied")), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQueue("test", &Config{Clock: clock.RealClock{}})
			defer q.ShutDown()
			q.Add("t/web")
			calls := 0
			sync := func(context.Context, string) error { calls++; return tc.err }
			if !processNext(context.Background(), slog.New(slog.DiscardHandler), q, sync) {
				t.Fatal("processNext stopped on a live queue")
			}
			if calls != 1 {
				t.Fatalf("sync called %d times, want 1", calls)
			}
			if got := q.NumRequeues("t/web"); got != tc.wantRequeues {
				t.Fatalf("requeues = %d, want %d", got, tc.wantRequeues)
			}
		})
	}
}
