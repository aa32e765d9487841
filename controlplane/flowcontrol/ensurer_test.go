package flowcontrol

import (
	"context"
	"errors"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"berth/internal/errdefs"
)

func TestNewEnsurerConfig(t *testing.T) {
	if _, err := NewEnsurer(EnsurerConfig{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("empty config: %v", err)
	}
	if _, err := New(Config{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("empty filter config: %v", err)
	}
}

// TestEnsurerRecreatesDeleted: on an empty cluster the ensurer creates
// every bootstrap object, and a deleted mandatory one is created again
// without waiting for the periodic pass (Interval is an hour here).
func TestEnsurerRecreatesDeleted(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	e, err := NewEnsurer(EnsurerConfig{Client: client.FlowcontrolV1(), Informers: factory, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		factory.Shutdown()
	}()
	fc := client.FlowcontrolV1()
	count := func() (int, int) {
		fs, _ := fc.FlowSchemas().List(ctx, metav1.ListOptions{})
		pl, _ := fc.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
		return len(fs.Items), len(pl.Items)
	}
	wantFS := len(bootstrap.MandatoryFlowSchemas) + len(bootstrap.SuggestedFlowSchemas)
	wantPL := len(bootstrap.MandatoryPriorityLevelConfigurations) + len(bootstrap.SuggestedPriorityLevelConfigurations)
	poll := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("bootstrap objects created", func() bool { f, p := count(); return f == wantFS && p == wantPL })
	if err := fc.FlowSchemas().Delete(ctx, flowcontrolv1.FlowSchemaNameCatchAll, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("catch-all recreated", func() bool {
		_, err := fc.FlowSchemas().Get(ctx, flowcontrolv1.FlowSchemaNameCatchAll, metav1.GetOptions{})
		return err == nil
	})
}
