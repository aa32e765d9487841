package cronjob

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	batchlisters "k8s.io/client-go/listers/batch/v1"

	"berth/controlplane/controller"
)

// Name is the controller's name (in the manager, logs and the queue).
const Name = "cronjob"

// DefaultWorkers is upstream's --concurrent-cron-job-syncs.
const DefaultWorkers = 5

// Config configures the CronJob controller.
type Config struct {
	controller.Config
}

// Controller is the CronJob controller.
type Controller struct {
	cfg       Config
	cjLister  batchlisters.CronJobLister
	jobLister batchlisters.JobLister
	queue     *controller.Queue
}

// New validates cfg and registers the CronJobs and Jobs informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	cjInf := cfg.Informers.Batch().V1().CronJobs()
	jobInf := cfg.Informers.Batch().V1().Jobs()
	c := &Controller{cfg: cfg, cjLister: cjInf.Lister(), jobLister: jobInf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	if err := c.queue.Watch(cjInf.Informer(), controller.On(controller.Added|controller.Updated, c.queue.Enqueue)); err != nil {
		return nil, err
	}
	owner := func(j *batchv1.Job) {
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.Kind == cronJobKind.Kind {
			c.queue.Add(j.Namespace + "/" + ref.Name)
		}
	}
	if err := c.queue.Watch(jobInf.Informer(), controller.On(controller.AllEvents, owner)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs CronJobs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	cj, found, err := controller.Lookup[*batchv1.CronJob](key, c.cjLister.CronJobs)
	if !found {
		return err
	}
	ns := cj.Namespace
	all, err := c.jobLister.Jobs(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var jobs []*batchv1.Job
	children := map[types.UID]bool{}
	for _, j := range all {
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.UID == cj.UID {
			jobs = append(jobs, j)
			children[j.UID] = true
		}
	}
	// Active jobs the cache lacks may just be new: ask the apiserver.
	gone := map[types.UID]bool{}
	for _, r := range cj.Status.Active {
		if children[r.UID] {
			continue
		}
		j, err := c.cfg.Client.BatchV1().Jobs(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && j.UID != r.UID):
			gone[r.UID] = true
		case err != nil:
			return err
		}
	}
	plan := Compute(Input{CronJob: cj, Jobs: jobs, Gone: gone, Now: c.cfg.Clock.Now()})
	return c.execute(ctx, key, cj, plan)
}

// execute deletes, creates, writes the status, records events and requeues.
func (c *Controller) execute(ctx context.Context, key string, cj *batchv1.CronJob, plan Plan) error {
	var errs []error
	background := metav1.DeletePropagationBackground
	for _, j := range plan.Delete {
		err := c.cfg.Client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) {
			c.cfg.Recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
			errs = append(errs, fmt.Errorf("delete job %s: %w", j.Name, err))
			if plan.Create != nil && cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent {
				return fmt.Errorf("could not replace job %s/%s: %w", j.Namespace, j.Name, err)
			}
			continue
		}
		c.cfg.Recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
	}
	status := plan.Status
	if plan.Create != nil {
		created, err := c.cfg.Client.BatchV1().Jobs(cj.Namespace).Create(ctx, plan.Create, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			created, err = c.cfg.Client.BatchV1().Jobs(cj.Namespace).Get(ctx, plan.Create.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !metav1.IsControlledBy(created, cj) || containsUID(status.Active, created.UID) {
				created = nil
			}
		case err != nil:
			if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				c.cfg.Recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
			}
			return errors.Join(append(errs, err)...)
		default:
			c.cfg.Recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
		}
		if created != nil {
			status.Active = append(status.Active, corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: created.Namespace,
				Name: created.Name, UID: created.UID, ResourceVersion: created.ResourceVersion})
			status.LastScheduleTime = &metav1.Time{Time: plan.Scheduled}
		}
	}
	if statusChanged(cj, &status) {
		cp := cj.DeepCopy()
		cp.Status = status
		if _, err := c.cfg.Client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
			return errors.Join(append(errs, fmt.Errorf("update status of cronjob %s: %w", key, err))...)
		}
	}
	for _, e := range plan.Events {
		c.cfg.Recorder.Event(cj, e.Type, e.Reason, e.Message)
	}
	if plan.RequeueAfter > 0 {
		c.queue.AddAfter(key, plan.RequeueAfter)
	}
	return errors.Join(errs...)
}

func containsUID(refs []corev1.ObjectReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}
