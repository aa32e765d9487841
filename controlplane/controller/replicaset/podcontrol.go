package replicaset

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"berth/controlplane/controller"
)

// PodControl creates and deletes the pods of the controllers that keep
// pods for an owner (ReplicaSets, ReplicationControllers, DaemonSets):
// each creation and deletion is recorded in Expectations before it is
// issued, so that syncs on a stale cache do nothing until the cache has
// seen it, and reported as an event on the owner.
type PodControl struct {
	Client       kubernetes.Interface
	Recorder     record.EventRecorder
	Expectations *Expectations
}

// Create creates n pods, newPod(i) the i-th, for the owner keyed key
// (events on owner) in slow-start batches: a batch that fails stops the
// rest, whose expectations are dropped. Creations refused because the
// namespace is terminating are not errors.
func (pc PodControl) Create(ctx context.Context, key string, owner runtime.Object, n int, newPod func(i int) *corev1.Pod) error {
	pc.Expectations.ExpectCreations(key, n)
	next := 0
	for _, batch := range SlowStartBatches(n) {
		var wg sync.WaitGroup
		errCh := make(chan error, batch)
		for i := next; i < next+batch; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				want := newPod(i)
				pod, err := pc.Client.CoreV1().Pods(want.Namespace).Create(ctx, want, metav1.CreateOptions{})
				if err != nil {
					pc.Expectations.CreationObserved(key)
					if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
						return // the namespace is going away; nothing to do
					}
					pc.Recorder.Eventf(owner, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
					errCh <- err
					return
				}
				pc.Recorder.Eventf(owner, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", pod.Name)
			}()
		}
		wg.Wait()
		close(errCh)
		next += batch
		if err, failed := <-errCh; failed {
			// The pods of the batches never attempted will not be seen.
			for range n - next {
				pc.Expectations.CreationObserved(key)
			}
			return err
		}
	}
	return nil
}

// Delete deletes pods, in parallel, for the owner keyed key (events on
// owner); pods already gone are not errors.
func (pc PodControl) Delete(ctx context.Context, key string, owner runtime.Object, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	podKeys := make([]string, len(pods))
	for i, p := range pods {
		podKeys[i], _ = controller.KeyFunc(p)
	}
	pc.Expectations.ExpectDeletions(key, podKeys)
	var wg sync.WaitGroup
	errCh := make(chan error, len(pods))
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := pc.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
			if err == nil {
				pc.Recorder.Eventf(owner, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
				return
			}
			pc.Expectations.DeletionObserved(key, podKeys[i])
			if apierrors.IsNotFound(err) {
				return
			}
			pc.Recorder.Eventf(owner, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
			errCh <- fmt.Errorf("delete pod %s: %w", p.Name, err)
		}()
	}
	wg.Wait()
	close(errCh)
	return <-errCh
}
