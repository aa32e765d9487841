package admission_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"

	berthadm "berth/controlplane/admission"
)

// lateAccounts is a clientset whose service accounts are "not found" for
// the first misses lookups, and counts lookups by name.
func lateAccounts(misses int32, lookups map[string]*atomic.Int32) *fake.Clientset {
	client := fake.NewClientset(sa("ns", "default", nil), sa("ns", "builder", nil))
	var seen atomic.Int32
	client.PrependReactor("get", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.GetAction).GetName()
		if c := lookups[name]; c != nil {
			c.Add(1)
		}
		if seen.Add(1) <= misses {
			return true, nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
		}
		return false, nil, nil
	})
	return client
}

func waitingPlugin(t *testing.T, client *fake.Clientset) *berthadm.ServiceAccount {
	t.Helper()
	p, err := berthadm.NewServiceAccount(berthadm.ServiceAccountConfig{
		ServiceAccounts: corelisters.NewServiceAccountLister(indexer(t)), // an informer that has not seen them yet
		Client:          client,
		RetryInterval:   time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServiceAccountWaitsForDefault: a pod created just after its namespace
// is admitted once the controller creates "default" (as upstream, which
// looks it up ten times before refusing).
func TestServiceAccountWaitsForDefault(t *testing.T) {
	lookups := map[string]*atomic.Int32{"default": {}}
	p := waitingPlugin(t, lateAccounts(3, lookups))
	pod := newPod("ns", "p")
	if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
		t.Fatalf("pod refused while default appeared: %v", err)
	}
	if n := lookups["default"].Load(); n < 4 {
		t.Errorf("%d lookups, want at least 4 (3 misses, then found)", n)
	}
	if len(pod.Spec.Volumes) != 1 {
		t.Errorf("volumes %v, want the token volume", pod.Spec.Volumes)
	}
}

func TestServiceAccountGivesUpOnDefault(t *testing.T) {
	lookups := map[string]*atomic.Int32{"default": {}}
	p := waitingPlugin(t, lateAccounts(1000, lookups))
	err := admit(context.Background(), p, podCreate(newPod("ns", "p"), alice))
	wantStatus(t, err, 403, `error looking up service account ns/default`)
	if n := lookups["default"].Load(); n != berthadm.DefaultAccountAttempts {
		t.Errorf("%d lookups, want %d", n, berthadm.DefaultAccountAttempts)
	}
}

// TestServiceAccountNamedLooksOnce: other accounts are looked up once.
func TestServiceAccountNamedLooksOnce(t *testing.T) {
	lookups := map[string]*atomic.Int32{"builder": {}}
	p := waitingPlugin(t, lateAccounts(1000, lookups))
	pod := newPod("ns", "p")
	pod.Spec.ServiceAccountName = "builder"
	wantStatus(t, admit(context.Background(), p, podCreate(pod, alice)), 403, `error looking up service account ns/builder`)
	if n := lookups["builder"].Load(); n != 1 {
		t.Errorf("%d lookups of builder, want 1", n)
	}
}
