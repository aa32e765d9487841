package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"berth/controlplane/controller"
	"berth/controlplane/controller/controllerref"
	"berth/controlplane/controller/replicaset"
)

// Name is the controller's name (in the manager, logs and the queue).
const Name = "job"

// DefaultWorkers is upstream's --concurrent-job-syncs.
const DefaultWorkers = 5

var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

// orphanPrefix marks queue keys of pods whose tracking finalizer must go
// because their job is gone or finished.
const orphanPrefix = "pod:"

// Config configures the Job controller.
type Config struct {
	controller.Config
}

// Controller is the Job controller.
type Controller struct {
	cfg          Config
	jobLister    batchlisters.JobLister
	podLister    corelisters.PodLister
	owners       controller.Owners[*batchv1.Job]
	queue        *controller.Queue
	expectations *replicaset.Expectations
	pods         controllerref.Adopter[*batchv1.Job, *corev1.Pod]

	mu sync.Mutex
	// removed holds, per job key, the pods whose finalizer this controller
	// removed and the cache has not yet shown without it.
	removed map[string]sets.Set[types.UID]
	// backoff holds each job's failure back-off record.
	backoff map[string]Backoff
}

// New validates cfg and registers the controller's informers (Jobs, Pods).
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	jobInf := cfg.Informers.Batch().V1().Jobs()
	podInf := cfg.Informers.Core().V1().Pods()
	c := &Controller{
		cfg:       cfg,
		jobLister: jobInf.Lister(),
		podLister: podInf.Lister(),
		owners: controller.OwnersFromLister(jobKind, jobInf.Lister().Jobs,
			func(j *batchv1.Job) *metav1.LabelSelector { return j.Spec.Selector }),
		queue:        controller.NewQueue(Name, &cfg.Config),
		expectations: replicaset.NewExpectations(cfg.Clock),
		pods:         controllerref.PodAdopter(cfg.Client, jobKind, controllerref.Fetch[*batchv1.Job](cfg.Client.BatchV1().Jobs)),
		removed:      map[string]sets.Set[types.UID]{},
		backoff:      map[string]Backoff{},
	}
	c.pods.AdoptPatch = adoptPatch
	if err := c.queue.Watch(jobInf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.queue.Enqueue,
		UpdateFunc: func(_, cur any) { c.queue.Enqueue(cur) },
		DeleteFunc: c.deleteJob,
	}); err != nil {
		return nil, err
	}
	if err := c.queue.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj.(*corev1.Pod)) },
		UpdateFunc: func(old, cur any) { c.podChanged(old.(*corev1.Pod), cur.(*corev1.Pod)) },
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs Jobs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

// deleteJob forgets the job and frees the pods it leaves with a finalizer.
func (c *Controller) deleteJob(obj any) {
	j, ok := controller.Object[*batchv1.Job](obj)
	if !ok {
		return
	}
	key, _ := controller.KeyFunc(j)
	c.expectations.Delete(key)
	c.mu.Lock()
	delete(c.removed, key)
	delete(c.backoff, key)
	c.mu.Unlock()
	pods, err := c.podLister.Pods(j.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == j.UID && hasFinalizer(p) {
			c.enqueueOrphan(p)
		}
	}
}

func (c *Controller) enqueueOrphan(p *corev1.Pod) {
	c.queue.Add(orphanPrefix + p.Namespace + "/" + p.Name)
}

// owner resolves a pod's controllerRef to a Job in the cache; controlled
// reports whether the pod has a controller at all.
func (c *Controller) owner(p *corev1.Pod) (j *batchv1.Job, controlled bool) {
	ref := metav1.GetControllerOfNoCopy(p)
	j, _ = c.owners.Resolve(p.Namespace, ref)
	return j, ref != nil
}

func (c *Controller) podChanged(old, cur *corev1.Pod) {
	if old != nil && old.ResourceVersion == cur.ResourceVersion {
		return
	}
	j, controlled := c.owner(cur)
	if j == nil || IsFinished(j) {
		// Released, never owned, or its job is gone or done: nothing
		// counts it any more, so its finalizer goes.
		if hasFinalizer(cur) {
			c.enqueueOrphan(cur)
		}
		if !controlled {
			c.enqueueMatching(cur)
		}
		return
	}
	key, _ := controller.KeyFunc(j)
	if old == nil {
		c.expectations.CreationObserved(key)
	}
	if !hasFinalizer(cur) {
		c.finalizerObserved(key, cur.UID)
	}
	if cur.DeletionTimestamp != nil && (old == nil || old.DeletionTimestamp == nil) {
		podKey, _ := controller.KeyFunc(cur)
		c.expectations.DeletionObserved(key, podKey)
	}
	c.queue.Add(key)
}

func (c *Controller) deletePod(obj any) {
	p, ok := controller.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	j, _ := c.owner(p)
	if j == nil {
		return
	}
	key, _ := controller.KeyFunc(j)
	podKey, _ := controller.KeyFunc(p)
	if IsFinished(j) {
		c.finalizerObserved(key, p.UID)
		return
	}
	c.expectations.DeletionObserved(key, podKey)
	c.finalizerObserved(key, p.UID)
	c.queue.Add(key)
}

// enqueueMatching enqueues the jobs whose selector matches orphan p.
func (c *Controller) enqueueMatching(p *corev1.Pod) {
	for _, j := range c.owners.Matching(p.Namespace, p.Labels) {
		c.queue.Enqueue(j)
	}
}

func (c *Controller) finalizerObserved(key string, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.removed[key]; s != nil {
		s.Delete(uid)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if podKey, ok := strings.CutPrefix(key, orphanPrefix); ok {
		return c.syncOrphan(ctx, podKey)
	}
	job, found, err := controller.Lookup[*batchv1.Job](key, c.jobLister.Jobs)
	if !found {
		return err
	}
	ns := job.Namespace
	if job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName {
		return nil
	}
	satisfied := c.expectations.Satisfied(key)
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		c.cfg.Recorder.Eventf(job, corev1.EventTypeWarning, "InvalidSelector", "invalid selector: %v", err)
		return nil
	}
	all, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := c.pods.Execute(ctx, job, controllerref.Plan(job, sel, all))
	if err != nil {
		return err
	}
	if IsFinished(job) {
		c.mu.Lock()
		delete(c.backoff, key)
		c.mu.Unlock()
		var left []*corev1.Pod
		for _, p := range pods {
			if hasFinalizer(p) {
				left = append(left, p)
			}
		}
		return c.removeFinalizers(ctx, key, left)
	}
	c.mu.Lock()
	removed := c.removed[key].Clone()
	backoff := c.backoff[key]
	c.mu.Unlock()
	plan := Compute(Input{Job: job, Pods: pods, FinalizersRemoved: removed, ExpectationsSatisfied: satisfied,
		Backoff: backoff, Now: c.cfg.Clock.Now()})
	return c.execute(ctx, key, job, plan)
}

// adoptPatch makes job the controller of p and adds the tracking finalizer.
func adoptPatch(job *batchv1.Job, p *corev1.Pod) ([]byte, error) {
	var m map[string]map[string]any
	if err := json.Unmarshal(controllerref.AdoptPatch(job, jobKind, p.UID), &m); err != nil {
		return nil, err
	}
	m["metadata"]["finalizers"] = []string{batchv1.JobTrackingFinalizer}
	return json.Marshal(m)
}

// execute applies plan: delete pods, create pods, write the interim status,
// remove finalizers, write the final status, record events.
func (c *Controller) execute(ctx context.Context, key string, job *batchv1.Job, plan Plan) error {
	if err := c.deletePods(ctx, key, job, plan.Delete); err != nil {
		return err
	}
	failed, createErr := c.createPods(ctx, key, job, plan.Create)
	plan.Status.Active -= int32(failed)
	if plan.Interim != nil {
		plan.Interim.Active -= int32(failed)
	}
	written := &job.Status
	if plan.Interim != nil {
		out, err := c.writeStatus(ctx, job, *plan.Interim)
		if err != nil {
			return errors.Join(createErr, err)
		}
		job, written = out, plan.Interim
		c.keepBackoff(key, plan.Backoff)
	}
	if err := c.removeFinalizers(ctx, key, plan.RemoveFinalizers); err != nil {
		return errors.Join(createErr, err)
	}
	if !equality.Semantic.DeepEqual(written, &plan.Status) {
		if _, err := c.writeStatus(ctx, job, plan.Status); err != nil {
			return errors.Join(createErr, err)
		}
		c.keepBackoff(key, plan.Backoff)
	}
	for _, e := range plan.Events {
		c.cfg.Recorder.Event(job, e.Type, e.Reason, e.Message)
	}
	if plan.RequeueAfter > 0 {
		c.queue.AddAfter(key, plan.RequeueAfter)
	}
	return createErr
}

func (c *Controller) keepBackoff(key string, b Backoff) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.backoff[key] = b
}

// writeStatus writes status to job's /status.
func (c *Controller) writeStatus(ctx context.Context, job *batchv1.Job, status batchv1.JobStatus) (*batchv1.Job, error) {
	cp := job.DeepCopy()
	cp.Status = status
	out, err := c.cfg.Client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update status of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return out, nil
}

// removeFinalizerPatch drops the tracking finalizer (and nothing else).
var removeFinalizerPatch = []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + batchv1.JobTrackingFinalizer + `"]}}`)

// removeFinalizers removes the tracking finalizer from pods, in parallel,
// remembering each until the cache shows it gone.
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	c.mu.Lock()
	if c.removed[key] == nil {
		c.removed[key] = sets.New[types.UID]()
	}
	for _, p := range pods {
		c.removed[key].Insert(p.UID)
	}
	c.mu.Unlock()
	return c.parallel(pods, func(p *corev1.Pod) error {
		_, err := c.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, removeFinalizerPatch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			c.finalizerObserved(key, p.UID)
			return fmt.Errorf("remove tracking finalizer from pod %s: %w", p.Name, err)
		}
		return nil
	})
}

// deletePods deletes pods, each after removing its tracking finalizer.
func (c *Controller) deletePods(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	podKeys := make(map[*corev1.Pod]string, len(pods))
	keys := make([]string, 0, len(pods))
	for _, p := range pods {
		podKeys[p], _ = controller.KeyFunc(p)
		keys = append(keys, podKeys[p])
	}
	c.expectations.ExpectDeletions(key, keys)
	return c.parallel(pods, func(p *corev1.Pod) error {
		err := c.removeFinalizers(ctx, key, []*corev1.Pod{p})
		if err == nil {
			err = c.cfg.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		}
		if err == nil {
			c.cfg.Recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
			return nil
		}
		c.expectations.DeletionObserved(key, podKeys[p])
		if apierrors.IsNotFound(err) {
			return nil
		}
		c.cfg.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	})
}

func (c *Controller) parallel(pods []*corev1.Pod, fn func(*corev1.Pod) error) error {
	var wg sync.WaitGroup
	errCh := make(chan error, len(pods))
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(p); err != nil {
				errCh <- err
			}
		}()
	}
	wg.Wait()
	close(errCh)
	var errs []error
	for err := range errCh {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// createPods creates one pod per entry of indexes in slow-start batches;
// it returns how many were not created.
func (c *Controller) createPods(ctx context.Context, key string, job *batchv1.Job, indexes []NewPod) (int, error) {
	if len(indexes) == 0 {
		return 0, nil
	}
	c.expectations.ExpectCreations(key, len(indexes))
	done := 0
	for _, size := range replicaset.SlowStartBatches(len(indexes)) {
		batch := indexes[done : done+size]
		var wg sync.WaitGroup
		errCh := make(chan error, size)
		for _, ix := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pod, err := c.cfg.Client.CoreV1().Pods(job.Namespace).Create(ctx, PodFromTemplate(job, ix), metav1.CreateOptions{})
				if err != nil {
					c.expectations.CreationObserved(key)
					if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
						c.cfg.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
					}
					errCh <- err
					return
				}
				c.cfg.Recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", pod.Name)
			}()
		}
		wg.Wait()
		close(errCh)
		done += size
		failed := len(errCh)
		if failed > 0 {
			for range len(indexes) - done {
				c.expectations.CreationObserved(key)
			}
			return failed + len(indexes) - done, <-errCh
		}
	}
	return 0, nil
}

// PodFromTemplate is the pod job creates for np: the template with the
// tracking finalizer and job as its controller; an Indexed job's pod also
// gets the completion index annotation and label, the JOB_COMPLETION_INDEX
// variable in every container, the hostname NAME-INDEX, the generateName
// NAME-INDEX- and, with backoffLimitPerIndex, its index's failure counts.
func PodFromTemplate(job *batchv1.Job, np NewPod) *corev1.Pod {
	ix := np.Index
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    podGenerateName(job.Name, ix),
			Namespace:       job.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewControllerRef(job, jobKind)},
		},
		Spec: t.Spec,
	}
	if !hasFinalizer(pod) {
		pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	}
	if ix == noIndex {
		return pod
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, ix)
	if np.FailureCount != nil {
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(*np.FailureCount))
		if n := ptr.Deref(np.IgnoredCount, 0); n > 0 {
			pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(n))
		}
	}
	env := corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)}}}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !containsEnv(list[i].Env, completionIndexEnv) {
				list[i].Env = append(list[i].Env, env)
			}
		}
	}
	return pod
}

func containsEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// syncOrphan removes the tracking finalizer from a pod no unfinished job
// controls (pods of other kinds of controllers are left alone).
func (c *Controller) syncOrphan(ctx context.Context, podKey string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(podKey)
	if err != nil {
		return nil
	}
	p, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !hasFinalizer(p)) {
		return nil
	}
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		if ref.Kind != jobKind.Kind || ref.APIVersion != jobKind.GroupVersion().String() {
			return nil
		}
		if j, _ := c.owner(p); j != nil && !IsFinished(j) {
			return nil // its job tracks it
		}
	}
	_, err = c.cfg.Client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, removeFinalizerPatch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove tracking finalizer from orphan pod %s: %w", podKey, err)
	}
	return nil
}
