package up

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth/internal/errdefs"
)

// adminClient is a client of the cluster from its admin kubeconfig.
func adminClient(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cluster: admin kubeconfig: %w", err)
	}
	rc.UserAgent = "berth-up"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster: admin client: %w", err)
	}
	return client, nil
}

// checkNodePodCIDR fails when the Node name, from an earlier run on this
// data dir, already has a pod CIDR other than podCIDR: a Node's podCIDR
// never changes, so the agent would keep using the old one.
func checkNodePodCIDR(ctx context.Context, kubeconfig, name, podCIDR string) error {
	client, err := adminClient(kubeconfig)
	if err != nil {
		return err
	}
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: get node %s: %w", name, err)
	}
	if have := node.Spec.PodCIDR; have != "" && have != podCIDR {
		return fmt.Errorf("cluster: PodCIDR (--pod-cidr): %s, but node %s of this data dir already has pod CIDR %s, which never changes: start with --pod-cidr %s, or delete the node (kubectl delete node %s) first: %w",
			podCIDR, name, have, have, name, errdefs.ErrConflict)
	}
	return nil
}

// waitNodeReady polls until the Node name has condition Ready=True, or
// fails when done closes (the agent ended) or startTimeout passes.
func waitNodeReady(ctx context.Context, kubeconfig, name string, done <-chan struct{}) error {
	client, err := adminClient(kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := "not registered"
	for {
		if node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			last = "no Ready condition"
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					if c.Status == corev1.ConditionTrue {
						return nil
					}
					last = fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message)
				}
			}
		}
		select {
		case <-done:
			return fmt.Errorf("agent stopped before node %s was Ready: %w", name, errdefs.ErrUnavailable)
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready after %s (%s): %w", name, startTimeout, last, ctx.Err())
		case <-tick.C:
		}
	}
}
