package rootcacertpublisher

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

var ca = []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")

func TestPlan(t *testing.T) {
	now := metav1.Now()
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	good := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "team", Annotations: map[string]string{DescriptionAnnotation: description}},
		Data:       map[string]string{DataKey: string(ca)},
	}
	edited := good.DeepCopy()
	edited.Data[DataKey] = "tampered"
	edited.Data["extra"] = "x"
	unannotated := good.DeepCopy()
	unannotated.Annotations = nil
	for _, tc := range []struct {
		name     string
		ns       *corev1.Namespace
		existing *corev1.ConfigMap
		want     Action
	}{
		{"new namespace", active, nil, Create},
		{"up to date", active, good, Nothing},
		{"edited data", active, edited, Update},
		{"annotation removed", active, unannotated, Update},
		{"namespace gone", nil, nil, Nothing},
		{"terminating", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, nil, Nothing},
		{"being deleted", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &now}}, nil, Nothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cm := Plan(tc.ns, tc.existing, ca)
			if got != tc.want {
				t.Fatalf("Plan = %v, want %v", got, tc.want)
			}
			if got == Nothing {
				if cm != nil {
					t.Fatalf("Nothing came with a configmap %v", cm)
				}
				return
			}
			if cm.Name != ConfigMapName || cm.Namespace != "team" {
				t.Errorf("configmap %s/%s, want team/%s", cm.Namespace, cm.Name, ConfigMapName)
			}
			if len(cm.Data) != 1 || cm.Data[DataKey] != string(ca) {
				t.Errorf("data %v, want only %s = the CA", cm.Data, DataKey)
			}
			if cm.Annotations[DescriptionAnnotation] == "" {
				t.Errorf("no %s annotation", DescriptionAnnotation)
			}
		})
	}
}

func TestNewRequiresRootCA(t *testing.T) {
	client := fake.NewClientset()
	_, err := New(Config{Config: controller.Config{Client: client, Informers: informers.NewSharedInformerFactory(client, 0)}})
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("New without RootCA: %v, want ErrInvalidArgument", err)
	}
}

// TestPublishes runs the controller against a fake clientset: the
// ConfigMap appears in existing and new namespaces and comes back after
// deletion and edits.
func TestPublishes(t *testing.T) {
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(Config{Config: controller.Config{Client: client, Informers: factory}, RootCA: ca})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	})

	waitCA := func(ns string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			if err == nil && cm.Data[DataKey] == string(ca) && len(cm.Data) == 1 {
				return
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s not published (last: %v, %v)", ns, ConfigMapName, cm, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCA("default")
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCA("team")

	if err := client.CoreV1().ConfigMaps("team").Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCA("team")

	cm, err := client.CoreV1().ConfigMaps("team").Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{DataKey: "tampered"}
	if _, err := client.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCA("team")
}
