package controllers

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"berth/integration/harness"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// finishPods plays the agent for a job's pods: each new pod runs and then
// terminates with the exit code exit returns for it (0: Succeeded).
func finishPods(t *testing.T, ns string, exit func(p *corev1.Pod) int32) {
	t.Helper()
	onPodEvents(t, ns, func(ctx context.Context, ev watch.Event, p *corev1.Pod) {
		if ev.Type != watch.Added || p.Status.Phase != "" && p.Status.Phase != corev1.PodPending {
			return
		}
		code := exit(p)
		now := metav1.Now()
		p = p.DeepCopy()
		p.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			p.Status.Phase = corev1.PodFailed
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: now, FinishedAt: now}}}}
		if _, err := env.client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
			t.Errorf("finish pod %s: %v", p.Name, err)
		}
	})
}

func jobCondition(j *batchv1.Job, ct batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// waitJob waits until the job has a true condition ct and returns it.
func waitJob(t *testing.T, ns, name string, ct batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	var j *batchv1.Job
	harness.Eventually(t, "job "+name+" "+string(ct), func() (bool, error) {
		var err error
		j, err = env.client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && jobCondition(j, ct) != nil, err
	})
	return j
}

// noFinalizersLeft waits until no pod of ns holds the tracking finalizer.
func noFinalizersLeft(t *testing.T, ns string) {
	t.Helper()
	harness.Eventually(t, "tracking finalizers removed", func() (bool, error) {
		for _, p := range listPods(t, ns) {
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				return false, nil
			}
		}
		return true, nil
	})
}

func TestJobRetriesToBackoffLimitThenFails(t *testing.T) {
	ns := namespace(t)
	finishPods(t, ns, func(*corev1.Pod) int32 { return 1 })
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "fails"}, Spec: batchv1.JobSpec{BackoffLimit: int32p(1),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := env.client.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ns, "fails", batchv1.JobFailed)
	failed := jobCondition(j, batchv1.JobFailed)
	if failed.Reason != batchv1.JobReasonBackoffLimitExceeded || failed.Message != "Job has reached the specified backoff limit" ||
		jobCondition(j, batchv1.JobFailureTarget) == nil {
		t.Errorf("conditions %+v", j.Status.Conditions)
	}
	// backoffLimit 1: the first pod and one retry (after the 10 s back-off).
	if j.Status.Failed != 2 || j.Status.Active != 0 || len(listPods(t, ns)) != 2 || j.Status.CompletionTime != nil {
		t.Errorf("failed %d active %d pods %d completionTime %v", j.Status.Failed, j.Status.Active, len(listPods(t, ns)), j.Status.CompletionTime)
	}
	noFinalizersLeft(t, ns)
	if out := kubectl(t, "get", "job", "fails", "-n", ns); !strings.Contains(out, "Failed") || !strings.Contains(out, "0/1") {
		t.Errorf("kubectl get job:\n%s", out)
	}
}

func TestIndexedJobCompletesEachIndex(t *testing.T) {
	ns := namespace(t)
	finishPods(t, ns, func(*corev1.Pod) int32 { return 0 })
	indexed := batchv1.IndexedCompletion
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "idx"}, Spec: batchv1.JobSpec{Completions: int32p(3), Parallelism: int32p(2),
		CompletionMode: &indexed, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := env.client.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ns, "idx", batchv1.JobComplete)
	if j.Status.CompletedIndexes != "0-2" || j.Status.Succeeded != 3 || j.Status.CompletionTime == nil || jobCondition(j, batchv1.JobSuccessCriteriaMet) == nil {
		t.Errorf("status %+v", j.Status)
	}
	hosts := map[string]bool{}
	for _, p := range listPods(t, ns) {
		ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		if p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || p.Spec.Hostname != "idx-"+ix || !strings.HasPrefix(p.Name, "idx-"+ix+"-") {
			t.Errorf("pod %s: index %q label %q hostname %q", p.Name, ix, p.Labels[batchv1.JobCompletionIndexAnnotation], p.Spec.Hostname)
		}
		hosts[p.Spec.Hostname] = true
	}
	if len(hosts) != 3 {
		t.Errorf("hostnames %v", hosts)
	}
	noFinalizersLeft(t, ns)
}

func TestKubectlCreateJobAndWaitComplete(t *testing.T) {
	ns := namespace(t)
	finishPods(t, ns, func(*corev1.Pod) int32 { return 0 })
	kubectl(t, "create", "job", "hello", "-n", ns, "--image=busybox", "--", "echo", "hi")
	kubectl(t, "wait", "-n", ns, "--for=condition=complete", "--timeout=60s", "job/hello")
	out := kubectl(t, "get", "jobs", "-n", ns)
	if !strings.Contains(out, "Complete") || !strings.Contains(out, "1/1") {
		t.Errorf("kubectl get jobs:\n%s", out)
	}
	// ttlSecondsAfterFinished: the finished job goes, its pods with it.
	j, err := env.client.BatchV1().Jobs(ns).Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j.Spec.TTLSecondsAfterFinished = int32p(1)
	if _, err := env.client.BatchV1().Jobs(ns).Update(context.Background(), j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "job deleted after its TTL", func() (bool, error) {
		_, err := env.client.BatchV1().Jobs(ns).Get(context.Background(), "hello", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	harness.Eventually(t, "its pods deleted", func() (bool, error) { return len(listPods(t, ns)) == 0, nil })
}

func TestSuspendedJobCreatesNoPodsUntilResumed(t *testing.T) {
	ns := namespace(t)
	suspend := true
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Spec: batchv1.JobSpec{Suspend: &suspend, Parallelism: int32p(2), Completions: int32p(2),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := env.client.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ns, "later", batchv1.JobSuspended)
	if c := jobCondition(j, batchv1.JobSuspended); c.Reason != "JobSuspended" || len(listPods(t, ns)) != 0 || j.Status.StartTime != nil {
		t.Errorf("suspended: %+v, %d pods", j.Status, len(listPods(t, ns)))
	}
	kubectl(t, "patch", "job", "later", "-n", ns, "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	harness.Eventually(t, "pods created on resume", func() (bool, error) { return len(listPods(t, ns)) == 2, nil })
	harness.Eventually(t, "startTime set and Suspended=False on resume", func() (bool, error) {
		j, err := env.client.BatchV1().Jobs(ns).Get(context.Background(), "later", metav1.GetOptions{})
		if err != nil || j.Status.StartTime == nil {
			return false, err
		}
		if time.Since(j.Status.StartTime.Time) > time.Minute {
			t.Fatalf("startTime %v", j.Status.StartTime)
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobSuspended && c.Status == corev1.ConditionFalse && c.Reason == "JobResumed" {
				return true, nil
			}
		}
		return false, nil
	})
}
