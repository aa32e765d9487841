package multinode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"berth/integration/testbed"
)

// namespace creates a namespace for the test, deleted after it.
func namespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimSuffix(name, "-") + "-"}}
	got, err := c.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Namespaces().Delete(context.Background(), got.Name, metav1.DeleteOptions{})
	})
	// Pods need the default ServiceAccount, which a controller creates
	// (as upstream's e2e framework, wait for it).
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.CoreV1().ServiceAccounts(got.Name).Get(context.Background(), "default", metav1.GetOptions{})
		if err == nil {
			return got.Name
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default ServiceAccount after 1m: %v", got.Name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// busyboxPod is a pod on node running sh -c script.
func busyboxPod(bed *testbed.Bed, name, node, script string, labels map[string]string) *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: v1.PodSpec{
			NodeName: node, TerminationGracePeriodSeconds: &grace, RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "main", Image: bed.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", script}}},
		},
	}
}

// waitPod waits for the pod to satisfy cond, watching it.
func waitPod(t *testing.T, c kubernetes.Interface, ns, name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last *v1.Pod
	_, err := watchtools.UntilWithSync(ctx, listWatchPod(c, ns, name), &v1.Pod{}, nil, func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*v1.Pod)
		if !ok {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not %s after %s: %v; last: %s", ns, name, what, timeout, err, describe(last))
	}
	return last
}

func describe(p *v1.Pod) string {
	if p == nil {
		return "never seen"
	}
	s := fmt.Sprintf("phase %s on %s ip %s", p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
	for _, cs := range p.Status.ContainerStatuses {
		s += fmt.Sprintf("; %s: %+v", cs.Name, cs.State)
	}
	return s
}

func running(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" }

func ready(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return running(p) && c.Status == v1.ConditionTrue
		}
	}
	return false
}

func finished(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

func listWatchPod(c kubernetes.Interface, ns, name string) *cache.ListWatch {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return c.CoreV1().Pods(ns).List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return c.CoreV1().Pods(ns).Watch(context.Background(), o)
		},
	}
}
