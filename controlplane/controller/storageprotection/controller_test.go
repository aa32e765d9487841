package storageprotection

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// base returns a controller config on a fake clientset holding objs and a
// factory that is not started (tests fill its caches by hand).
func base(objs ...runtime.Object) (controller.Config, *fake.Clientset) {
	client := fake.NewClientset(objs...)
	return controller.Config{Client: client, Informers: informers.NewSharedInformerFactory(client, 0)}, client
}

func claimFinalizers(t *testing.T, client *fake.Clientset, name string) []string {
	t.Helper()
	c, err := client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Finalizers
}

func TestPVCSync(t *testing.T) {
	for _, tc := range []struct {
		name       string
		claim      *corev1.PersistentVolumeClaim
		cachedPods []*corev1.Pod
		livePods   []*corev1.Pod
		want       []string
	}{
		{"unused deleted claim is released", claim("c", claimDeleting), nil, nil, nil},
		{"a cached user keeps it", claim("c", claimDeleting), []*corev1.Pod{pod("p", usesClaim("c"))}, []*corev1.Pod{pod("p", usesClaim("c"))}, []string{PVCFinalizer}},
		{"a user only the live list has keeps it", claim("c", claimDeleting), nil, []*corev1.Pod{pod("new", usesClaim("c"))}, []string{PVCFinalizer}},
		{"a cached user keeps it without a live list", claim("c", claimDeleting), []*corev1.Pod{pod("cached", usesClaim("c"))}, nil, []string{PVCFinalizer}},
		{"a live claim gets the finalizer", claim("c", claimNoFinalizer), nil, nil, []string{PVCFinalizer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.claim}
			for _, p := range tc.livePods {
				objs = append(objs, p)
			}
			cfg, client := base(objs...)
			c, err := NewPVC(PVCConfig{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Informers.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(tc.claim); err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.cachedPods {
				if err := cfg.Informers.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.sync(context.Background(), "ns/c"); err != nil {
				t.Fatal(err)
			}
			if got := claimFinalizers(t, client, "c"); !slices.Equal(got, tc.want) {
				t.Fatalf("finalizers %v, want %v", got, tc.want)
			}
		})
	}
}

// A claim gone from the cache is no error (it was deleted meanwhile).
func TestPVCSyncMissingClaim(t *testing.T) {
	cfg, _ := base()
	c, err := NewPVC(PVCConfig{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.sync(context.Background(), "ns/missing"); err != nil {
		t.Fatalf("sync of a claim not in the cache: %v", err)
	}
}

func TestPVSync(t *testing.T) {
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		want []string
	}{
		{"bound volume kept", testVolume(corev1.VolumeBound, true, PVFinalizer), []string{PVFinalizer}},
		{"released volume let go", testVolume(corev1.VolumeReleased, true, "other", PVFinalizer), []string{"other"}},
		{"live volume protected", testVolume(corev1.VolumeAvailable, false), []string{PVFinalizer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, client := base(tc.pv)
			c, err := NewPV(PVConfig{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Informers.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(tc.pv); err != nil {
				t.Fatal(err)
			}
			if err := c.sync(context.Background(), "v"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumes().Get(context.Background(), "v", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Finalizers, tc.want) {
				t.Fatalf("finalizers %v, want %v", got.Finalizers, tc.want)
			}
		})
	}
}

// Deleting the last pod using a deleted claim lets the running controller
// release it.
func TestPVCControllerReleasesOnPodDelete(t *testing.T) {
	cfg, client := base(claim("c", claimDeleting), pod("p", usesClaim("c")))
	// The fake clientset drops events between an informer's list and its
	// watch: the pod is deleted only once the pods watch is registered.
	podsWatched := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("pods", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		once.Do(func() { close(podsWatched) })
		return true, w, err
	})
	c, err := NewPVC(PVCConfig{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Cleanup(func() { cancel(); <-done; cfg.Informers.Shutdown() })
	cfg.Informers.Start(ctx.Done())
	go func() { done <- c.Run(ctx) }()
	cfg.Informers.WaitForCacheSync(ctx.Done())
	<-podsWatched
	// Synced once with the pod present: the claim keeps its finalizer.
	if err := c.sync(ctx, "ns/c"); err != nil {
		t.Fatal(err)
	}
	if got := claimFinalizers(t, client, "c"); !slices.Equal(got, []string{PVCFinalizer}) {
		t.Fatalf("finalizers %v while the pod exists", got)
	}
	if err := client.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return len(claimFinalizers(t, client, "c")) == 0, nil
	})
	if err != nil {
		t.Fatalf("finalizers still %v after the pod was deleted: %v", claimFinalizers(t, client, "c"), err)
	}
}

func TestNewRejectsIncompleteConfig(t *testing.T) {
	if _, err := NewPVC(PVCConfig{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("NewPVC without a client: %v, want ErrInvalidArgument", err)
	}
	if _, err := NewPV(PVConfig{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("NewPV without a client: %v, want ErrInvalidArgument", err)
	}
}
