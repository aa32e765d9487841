package controllers

import (
	"context"
	"strings"
	"testing"

	"berth/integration/harness"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCronJobFiresAndKeepsHistory(t *testing.T) {
	ns := namespace(t)
	finishPods(t, ns, func(*corev1.Pod) int32 { return 0 })
	// kubectl create cronjob refuses @every; create it through the API.
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick"}, Spec: batchv1.CronJobSpec{Schedule: "@every 2s",
		SuccessfulJobsHistoryLimit: int32p(1), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}}}
	cj, err := env.client.BatchV1().CronJobs(ns).Create(context.Background(), cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Two runs complete: lastSuccessfulTime is set and only one
	// successful job is kept.
	var completed int
	harness.Eventually(t, "two scheduled jobs completed", func() (bool, error) {
		cj, err := env.client.BatchV1().CronJobs(ns).Get(context.Background(), "tick", metav1.GetOptions{})
		if err != nil || cj.Status.LastSuccessfulTime == nil || cj.Status.LastScheduleTime == nil {
			return false, err
		}
		completed = 0
		evs, err := env.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=tick"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "SawCompletedJob" {
				completed += int(e.Count)
			}
		}
		return completed >= 2, nil
	})
	harness.Eventually(t, "history trimmed to one successful job", func() (bool, error) {
		jobs, err := env.client.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		done := 0
		for _, j := range jobs.Items {
			if !metav1.IsControlledBy(&j, cj) || !strings.HasPrefix(j.Name, "tick-") {
				t.Errorf("job %s not the cron job's", j.Name)
			}
			if jobCondition(&j, batchv1.JobComplete) != nil {
				done++
			}
		}
		return done == 1, nil
	})
	// Suspended: no new jobs.
	kubectl(t, "patch", "cronjob", "tick", "-n", ns, "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	out := kubectl(t, "get", "cronjob", "tick", "-n", ns)
	if !strings.Contains(out, "@every 2s") || !strings.Contains(out, "True") {
		t.Errorf("kubectl get cronjob:\n%s", out)
	}
	// kubectl create job --from=cronjob/tick makes a job from the template.
	kubectl(t, "create", "job", "manual", "-n", ns, "--from=cronjob/tick")
	kubectl(t, "wait", "-n", ns, "--for=condition=complete", "--timeout=60s", "job/manual")
	j, err := env.client.BatchV1().Jobs(ns).Get(context.Background(), "manual", metav1.GetOptions{})
	if err != nil || j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || !metav1.IsControlledBy(j, cj) {
		t.Errorf("manual job: %v %+v", err, j.Annotations)
	}
}
