package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// replicaSets are the apps/v1 ReplicaSets a Controller made by New manages.
type replicaSets struct {
	inf    appsinformers.ReplicaSetInformer
	client kubernetes.Interface
}

func (replicaSets) kind() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
}

func (r replicaSets) informer() cache.SharedIndexInformer { return r.inf.Informer() }

func (r replicaSets) get(ns, name string) (*appsv1.ReplicaSet, error) {
	return r.inf.Lister().ReplicaSets(ns).Get(name)
}

func (r replicaSets) list(ns string) ([]*appsv1.ReplicaSet, error) {
	return r.inf.Lister().ReplicaSets(ns).List(labels.Everything())
}

func (r replicaSets) fetch(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
	return r.client.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (r replicaSets) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return r.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}
