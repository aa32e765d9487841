package controllers

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkDeployment1000 measures, against the real server, the time from
// creating a Deployment of 1000 replicas to the 1000th pod existing (the
// deployment and replicaset controllers, expectations and slow-start
// batches, through the apiserver and etcd). It prints a table.
func BenchmarkDeployment1000(b *testing.B) {
	const replicas = 1000
	ctx := context.Background()
	var rows []time.Duration
	for b.Loop() {
		b.StopTimer()
		ns := "bench-" + fmt.Sprint(time.Now().UnixNano())
		if _, err := env.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		// An informer (not a bare watch): it re-establishes the watch if
		// the server ends it under the burst of events.
		factory := informers.NewSharedInformerFactoryWithOptions(env.client, 0, informers.WithNamespace(ns))
		var seen atomic.Int64
		all := make(chan struct{})
		inf := factory.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
			if seen.Add(1) == replicas {
				close(all)
			}
		}}); err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		factory.Start(stop)
		factory.WaitForCacheSync(stop)
		b.StartTimer()
		start := time.Now()
		if _, err := env.client.AppsV1().Deployments(ns).Create(ctx, newDeployment(ns, replicas, "img:v1"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-all:
		case <-time.After(5 * time.Minute):
			b.Fatalf("only %d of %d pods after 5m", seen.Load(), replicas)
		}
		took := time.Since(start)
		b.StopTimer()
		close(stop)
		factory.Shutdown()
		rows = append(rows, took)
		_ = env.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		b.StartTimer()
	}
	var sum time.Duration
	for _, d := range rows {
		sum += d
	}
	mean := sum / time.Duration(len(rows))
	b.ReportMetric(mean.Seconds(), "s/all-created")
	b.ReportMetric(float64(replicas)/mean.Seconds(), "pods/s")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nscenario\truns\tall pods created (mean)\tpods/s")
	fmt.Fprintf(tw, "Deployment %d replicas → pods\t%d\t%.2fs\t%.0f\n", replicas, len(rows), mean.Seconds(), float64(replicas)/mean.Seconds())
	tw.Flush()
}
