package up

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/controlplane/authorization/rbac/bootstrap"
	"berth/controlplane/pki"
	"berth/ingress"
	"berth/internal/supervisor"
)

// ingressCredential is the ingress controller's client certificate in the
// data dir (ingress-controller.crt, .key).
const ingressCredential = "ingress-controller"

// startIngress runs the ingress controller on the node's HTTP and HTTPS
// ports with its own identity (bootstrap.IngressController, a client
// certificate from the cluster CA), after creating its IngressClass
// ingress.DefaultClassName (marked the default class) if missing. Ports in
// use do not stop the cluster: the controller is then left out, with a
// warning, and "" returned for its addresses.
func startIngress(ctx context.Context, sup *supervisor.Supervisor, cfg Config, server, kubeconfig string, log *slog.Logger) (httpAddr, httpsAddr string, err error) {
	log = log.With("component", "ingress")
	admin, err := adminClient(kubeconfig)
	if err != nil {
		return "", "", err
	}
	if err := ensureIngressClass(ctx, admin); err != nil {
		return "", "", fmt.Errorf("cluster: ingress: %w", err)
	}
	nodeIP, err := nodeInternalIP(ctx, admin, cfg.NodeName)
	if err != nil {
		return "", "", fmt.Errorf("cluster: ingress: %w", err)
	}
	certPEM, keyPEM, caPEM, err := pki.EnsureClient(cfg.DataDir, ingressCredential, bootstrap.IngressController)
	if err != nil {
		return "", "", fmt.Errorf("cluster: ingress: %w", err)
	}
	rc := &rest.Config{Host: "https://" + server, UserAgent: "berth-ingress",
		TLSClientConfig: rest.TLSClientConfig{CertData: certPEM, KeyData: keyPEM, CAData: caPEM}}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", "", fmt.Errorf("cluster: ingress: %w", err)
	}
	c, err := ingress.New(ingress.Config{
		Client:        client,
		HTTPAddress:   net.JoinHostPort("", strconv.Itoa(cfg.IngressHTTPPort)),
		HTTPSAddress:  net.JoinHostPort("", strconv.Itoa(cfg.IngressHTTPSPort)),
		StatusAddress: nodeIP,
		Logger:        log,
	})
	if errors.Is(err, syscall.EADDRINUSE) {
		log.Warn("the ingress controller is not started: its port is in use (choose others with --ingress-http-port and --ingress-https-port)", "err", err)
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("cluster: %w", err)
	}
	sup.Go("ingress", c.Run)
	return c.HTTPAddr().String(), c.HTTPSAddr().String(), nil
}

// ensureIngressClass creates the controller's IngressClass, marked as the
// default class, unless a class of that name exists (a user's change is
// kept).
func ensureIngressClass(ctx context.Context, client kubernetes.Interface) error {
	ic := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ingress.DefaultClassName,
			Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"},
		},
		Spec: networkingv1.IngressClassSpec{Controller: ingress.DefaultControllerName},
	}
	_, err := client.NetworkingV1().IngressClasses().Create(ctx, ic, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create IngressClass %s: %w", ingress.DefaultClassName, err)
	}
	return nil
}

// nodeInternalIP is the Node's InternalIP, as the agent reported it.
func nodeInternalIP(ctx context.Context, client kubernetes.Interface, name string) (string, error) {
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address, nil
		}
	}
	return "", fmt.Errorf("node %s has no InternalIP", name)
}
