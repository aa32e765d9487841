// Package ttlafterfinished is berth's TTL-after-finished controller: a Job
// with spec.ttlSecondsAfterFinished is deleted (foreground, so its pods go
// first) that many seconds after its Complete or Failed condition.
//
// Expiry is the pure decision; Controller re-reads the job from the
// apiserver before deleting it (its TTL may have changed) and deletes with
// a UID precondition.
package ttlafterfinished

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"

	"berth/controlplane/controller"
	"berth/controlplane/controller/job"
)

// Name is the controller's name (in the manager, logs and the queue).
const Name = "ttl-after-finished"

// DefaultWorkers is upstream's --concurrent-ttl-after-finished-syncs.
const DefaultWorkers = 5

// Expiry reports whether j is due for deletion at now, and otherwise how
// long until it is (0 when it never is: no TTL, not finished, or already
// being deleted).
func Expiry(j *batchv1.Job, now time.Time) (due bool, wait time.Duration) {
	if j.DeletionTimestamp != nil || j.Spec.TTLSecondsAfterFinished == nil {
		return false, 0
	}
	finished := job.FinishTime(j)
	if finished == nil {
		return false, 0
	}
	left := finished.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller deletes finished jobs whose TTL expired.
type Controller struct {
	cfg    Config
	lister batchlisters.JobLister
	queue  *controller.Queue
}

// New validates cfg and registers the Jobs informer.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	inf := cfg.Informers.Batch().V1().Jobs()
	c := &Controller{cfg: cfg, lister: inf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	enqueue := func(j *batchv1.Job) {
		if j.Spec.TTLSecondsAfterFinished != nil && job.IsFinished(j) && j.DeletionTimestamp == nil {
			c.queue.Enqueue(j)
		}
	}
	if err := c.queue.Watch(inf.Informer(), controller.On(controller.Added|controller.Updated, enqueue)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run deletes expired jobs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	j, found, err := controller.Lookup[*batchv1.Job](key, c.lister.Jobs)
	if !found {
		return err
	}
	ns, name := j.Namespace, j.Name
	if due, wait := Expiry(j, c.cfg.Clock.Now()); !due {
		if wait > 0 {
			c.queue.AddAfter(key, wait)
		}
		return nil
	}
	fresh, err := c.cfg.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if due, wait := Expiry(fresh, c.cfg.Clock.Now()); !due {
		if wait > 0 {
			c.queue.AddAfter(key, wait)
		}
		return nil
	}
	policy := metav1.DeletePropagationForeground
	err = c.cfg.Client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy,
		Preconditions: &metav1.Preconditions{UID: &fresh.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete expired job %s: %w", key, err)
	}
	return nil
}
