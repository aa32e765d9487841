package up

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/csi/driver"
	"berth/csi/provisioner"
	"berth/internal/supervisor"
)

// LocalStorageClass is the default StorageClass `berth up` creates: volumes
// from the node's csi-local, made when the first pod using the claim is
// scheduled, deleted with the claim (as k3s's local-path class).
const LocalStorageClass = "local"

// startLocalStorage runs csi-local for the node as a driver pod with its
// provisioner sidecar would: the driver serves on the agent's plugin dir
// and registers through the agent's plugin registry, the provisioner
// (node mode) provisions claims of LocalStorageClass, which is created as
// the cluster's default class if missing.
func startLocalStorage(ctx context.Context, sup *supervisor.Supervisor, dataDir, nodeName, kubeconfig string, log *slog.Logger) error {
	agentRoot := filepath.Join(dataDir, "agent")
	log = log.With("component", "csi-local")
	regDir := filepath.Join(agentRoot, "plugins_registry")
	if sock := filepath.Join(regDir, driver.DefaultDriverName+"-reg.sock"); len(sock) > driver.MaxSocketPath {
		// A unix socket path is limited to 107 bytes (the kubelet's plugin
		// registry has the same limit): provision, but do not register.
		log.Warn("csi-local does not register with the agent: its registration socket path is too long for a unix socket; its volumes can be provisioned but not mounted",
			"socket", sock, "max", driver.MaxSocketPath)
		regDir = ""
	}
	d, err := driver.New(driver.Config{
		Endpoint:        filepath.Join(agentRoot, "plugins", driver.DefaultDriverName, "csi.sock"),
		RootDir:         filepath.Join(dataDir, "csi-local"),
		NodeID:          nodeName,
		RegistrationDir: regDir,
		Logger:          log,
	})
	if err != nil {
		return fmt.Errorf("cluster: local storage: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("cluster: local storage: %w", err)
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rc, "berth-csi-local"))
	if err != nil {
		return fmt.Errorf("cluster: local storage: %w", err)
	}
	conn, err := grpc.NewClient("unix://"+d.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("cluster: local storage: %w", err)
	}
	p, err := provisioner.New(provisioner.Config{Client: client, Conn: conn, DriverName: d.Name(), NodeName: nodeName, Logger: log})
	if err != nil {
		conn.Close()
		return fmt.Errorf("cluster: local storage: %w", err)
	}
	sup.Go("csi-local", d.Run)
	sup.OnStop(conn.Close)
	sup.Go("csi-local provisioner", p.Run)
	if err := ensureLocalStorageClass(ctx, client, d.Name()); err != nil {
		return fmt.Errorf("cluster: local storage: %w", err)
	}
	return nil
}

// ensureLocalStorageClass creates LocalStorageClass, marked as the default
// class, unless a class of that name exists (a user's change is kept).
func ensureLocalStorageClass(ctx context.Context, client kubernetes.Interface, driverName string) error {
	reclaim := corev1.PersistentVolumeReclaimDelete
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        LocalStorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       driverName,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &mode,
	}
	_, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageClass %s: %w", LocalStorageClass, err)
	}
	return nil
}
