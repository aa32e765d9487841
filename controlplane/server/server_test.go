package server

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRunServesAndStops runs the server in-process: it writes its address
// and kubeconfig, serves the bootstrap namespaces to client-go, and on
// cancel stops, removing the address file.
func TestRunServesAndStops(t *testing.T) {
	dir := t.TempDir()
	srv, err := New(Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	addrFile := filepath.Join(dir, ListenAddressFile)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if data, err := os.ReadFile(addrFile); err == nil && strings.HasPrefix(string(data), "127.0.0.1:") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("server not ready after 60s")
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	if strings.Join(names, ",") != "default,kube-node-lease,kube-public,kube-system" {
		t.Fatalf("bootstrap namespaces %v", names)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller manager and the scheduler run inside, on the
	// loopback client, each holding its Lease under the same identity.
	var holders []string
	for _, name := range []string{"berth-controller-manager", SchedulerLeaseName} {
		for deadline := time.Now().Add(30 * time.Second); ; {
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
				holders = append(holders, *l.Spec.HolderIdentity)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("lease %s not held: %v", name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if holders[0] != holders[1] {
		t.Fatalf("lease holders %v, want one server identity", holders)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if _, err := os.Stat(addrFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("address file left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd", "member-data")); err != nil {
		t.Fatalf("etcd data not under DataDir/etcd: %v", err)
	}
}

// TestListenOnEveryAddressIsReachedOnLoopback: a server listening on
// 0.0.0.0 or [::] publishes 127.0.0.1 in listen-address and the admin
// kubeconfig, which its certificate covers (berth up's agent once dialled
// "[::]:6443" and failed certificate verification).
func TestListenOnEveryAddressIsReachedOnLoopback(t *testing.T) {
	for _, tt := range []struct {
		addr *net.TCPAddr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4zero, Port: 6443}, "127.0.0.1:6443"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 6443}, "127.0.0.1:6443"},
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 40000}, "127.0.0.1:40000"},
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 6443}, "10.1.2.3:6443"},
	} {
		if got := kubeconfigHost(tt.addr); got != tt.want {
			t.Errorf("kubeconfigHost(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
