package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/apilb"
	"berth/agent/bootstrap"
	"berth/agent/credentials"
	"berth/agent/mirror"
	"berth/agent/podworker"
	"berth/agent/source"
	"berth/internal/supervisor"
	"berth/internal/version"
)

// restConfig is how the agent reaches the apiserver: the kubeconfig, or the
// server URL with the join token and the cluster CA (the token is then
// traded for a node client certificate: nodeCredential).
//
// With Server, every connection goes through the returned balancer
// (nil with a kubeconfig), which the caller runs.
func (c *Config) restConfig() (*rest.Config, *apilb.Balancer, error) {
	var rc *rest.Config
	var lb *apilb.Balancer
	if c.Kubeconfig != "" {
		var err error
		if rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
			return nil, nil, fmt.Errorf("agent: --kubeconfig %s: %w", c.Kubeconfig, err)
		}
	} else {
		token, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return nil, nil, fmt.Errorf("agent: --token-file: %w", err)
		}
		if strings.TrimSpace(string(token)) == "" {
			return nil, nil, fmt.Errorf("agent: --token-file %s is empty", c.TokenFile)
		}
		servers := c.Servers()
		if lb, err = apilb.New(apilb.Config{Servers: servers, Logger: c.Logger.With("component", "apiserver-balancer")}); err != nil {
			return nil, nil, fmt.Errorf("agent: --server: %w", err)
		}
		// Whichever replica the balancer reaches, its certificate is
		// verified against the cluster CA for the name they all hold.
		rc = &rest.Config{Host: servers[0], BearerToken: strings.TrimSpace(string(token)),
			TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile, ServerName: apilb.ServerName}, Dial: lb.DialContext}
	}
	rc.UserAgent = "berth-agent/" + version.Version + " (" + c.NodeName + ")"
	rc.QPS, rc.Burst = 50, 100
	return rc, lb, nil
}

// nodeCredential trades the join token for a node client certificate
// (CN=system:node:NAME, O=system:nodes) through the CSR API, as the
// kubelet's TLS bootstrap; the pair is kept under RootDir/pki and reused
// while valid (the join token, possibly expired by then, is not used), and
// renewed before it expires (a bootstrap.Rotator run under run: the
// returned client presents the current certificate on each handshake).
// With a kubeconfig the given client stays. A certificate that cannot be
// had (the CSR API missing, the request refused, denied or never issued) is
// an error naming the reason: the agent does not run on the join token.
func (a *Agent) nodeCredential(ctx context.Context, run *supervisor.Supervisor, rc *rest.Config, kube kubernetes.Interface) (kubernetes.Interface, error) {
	cfg, log := &a.cfg, a.cfg.Logger
	if cfg.Kubeconfig != "" {
		return kube, nil
	}
	req := bootstrap.Request{Client: kube, NodeName: cfg.NodeName, Dir: filepath.Join(cfg.RootDir, "pki"), Timeout: time.Minute}
	certFile, _, err := bootstrap.Obtain(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("agent: no node client certificate for the join token: %w", err)
	}
	rot, node, err := bootstrap.NewClientRotator(rc, bootstrap.RotatorConfig{Request: req, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	nodeKube, err := kubernetes.NewForConfig(node)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	run.Go("client certificate rotation", rot.Run)
	log.Info("authenticating with the node client certificate", "cert", certFile)
	return nodeKube, nil
}

// servingCertificate obtains the agent API's serving certificate through
// the CSR API (signer kubernetes.io/kubelet-serving; approved for a
// registered Node's own name and addresses), once the Node is registered,
// and a rotator renewing it before it expires (the caller runs it and
// serves its GetCertificate). It returns empty paths and no rotator
// (kubeletapi then generates a self-signed pair) when the apiserver has no
// CSR API or the request fails.
func (a *Agent) servingCertificate(ctx context.Context, kube kubernetes.Interface, nodeIP net.IP) (string, string, *bootstrap.Rotator) {
	cfg, log := &a.cfg, a.cfg.Logger
	if !bootstrap.ServesCSRs(kube) {
		log.Warn("the apiserver serves no CSR API: the agent API uses a self-signed certificate the apiserver's proxy will refuse (give --tls-cert-file)")
		return "", "", nil
	}
	for ctx.Err() == nil {
		n, err := kube.CoreV1().Nodes().Get(ctx, cfg.NodeName, metav1.GetOptions{})
		if err == nil && len(n.Status.Addresses) > 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	req := bootstrap.Request{Client: kube, NodeName: cfg.NodeName, Serving: true,
		IPs: []net.IP{nodeIP}, Dir: filepath.Join(cfg.RootDir, "pki"), Timeout: time.Minute}
	certFile, keyFile, err := bootstrap.Obtain(ctx, req)
	if err != nil {
		log.Warn("no serving certificate from the CSR API; using a self-signed one", "err", err)
		return "", "", nil
	}
	rot, err := bootstrap.NewRotator(bootstrap.RotatorConfig{Request: req, Logger: log})
	if err != nil {
		log.Warn("the serving certificate will not be renewed", "err", err)
		return certFile, keyFile, nil
	}
	return certFile, keyFile, rot
}

// clientCAFile is the file the agent API verifies client certificates
// against: ClientCAFile, else the kubeconfig's CA (written under RootDir/pki
// when the kubeconfig embeds it).
func (c *Config) clientCAFile(rc *rest.Config) (string, error) {
	switch {
	case c.ClientCAFile != "":
		return c.ClientCAFile, nil
	case rc.TLSClientConfig.CAFile != "":
		return rc.TLSClientConfig.CAFile, nil
	case len(rc.TLSClientConfig.CAData) > 0:
		path := filepath.Join(c.RootDir, "pki", "client-ca.crt")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", err
		}
		return path, os.WriteFile(path, rc.TLSClientConfig.CAData, 0o644)
	}
	return "", fmt.Errorf("agent: ClientCAFile (--client-ca-file): required for the agent API when the apiserver's CA is not given")
}

// pullCredentials returns the credentials for image from the pod's
// imagePullSecrets and its service account's, as the kubelet's keyring.
// Secrets that cannot be read are logged (by name) and skipped.
func pullCredentials(client kubernetes.Interface, log *slog.Logger) func(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	return func(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
		if pod.Annotations[source.AnnotationMirror] != "" || pod.Annotations[source.AnnotationConfigSource] == "file" {
			return nil // a static pod reads no API secrets
		}
		refs := append([]v1.LocalObjectReference(nil), pod.Spec.ImagePullSecrets...)
		if sa := pod.Spec.ServiceAccountName; sa != "" {
			if acct, err := client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, sa, metav1.GetOptions{}); err == nil {
				refs = append(refs, acct.ImagePullSecrets...)
			}
		}
		var secrets []*v1.Secret
		for _, ref := range refs {
			s, err := client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				log.Warn("image pull secret unavailable", "pod", pod.Namespace+"/"+pod.Name, "secret", ref.Name, "err", err)
				continue
			}
			secrets = append(secrets, s)
		}
		if len(secrets) == 0 {
			return nil
		}
		keyring, err := credentials.FromSecrets(secrets)
		if err != nil {
			log.Warn("image pull secrets unusable", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			return nil
		}
		return credentials.Union{keyring}.AuthConfigs(image)
	}
}

// apiPods hands the apiserver's pods to the pod workers: a pod with a
// deletionTimestamp is stopped with its deletion grace period (the status
// sync deletes it with grace 0 once its worker has removed everything).
type apiPods struct {
	workers *podworker.Manager
	log     *slog.Logger

	mu       sync.Mutex
	deleting map[types.UID]bool // logged as being deleted
}

var _ source.Handler = (*apiPods)(nil)

func newAPIPods(workers *podworker.Manager, log *slog.Logger) *apiPods {
	return &apiPods{workers: workers, log: log, deleting: map[types.UID]bool{}}
}

// Update implements source.Handler.
func (p *apiPods) Update(pod *v1.Pod) {
	if pod.DeletionTimestamp != nil {
		p.mu.Lock()
		seen := p.deleting[pod.UID]
		p.deleting[pod.UID] = true
		p.mu.Unlock()
		if !seen {
			p.log.Info("pod deleted in the apiserver; stopping it", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID,
				"grace", pod.DeletionGracePeriodSeconds)
		}
		p.workers.Update(pod) // terminates it
		return
	}
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		if !p.workers.Known(pod.UID) {
			return // finished before: nothing to run
		}
	}
	p.workers.Update(pod)
}

// Remove implements source.Handler.
func (p *apiPods) Remove(pod *v1.Pod) {
	p.log.Info("pod gone from the apiserver", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
	p.mu.Lock()
	delete(p.deleting, pod.UID)
	p.mu.Unlock()
	p.workers.Remove(pod.UID)
}

// staticPods hands the manifest directory's pods to the pod workers and,
// joined, to the mirror pod manager.
type staticPods struct {
	workers *podworker.Manager
	mirrors *mirror.Manager // nil when standalone
}

var _ source.Handler = (*staticPods)(nil)

// Update implements source.Handler.
func (p *staticPods) Update(pod *v1.Pod) {
	p.workers.Update(pod)
	if p.mirrors != nil {
		p.mirrors.Set(pod)
	}
}

// Remove implements source.Handler.
func (p *staticPods) Remove(pod *v1.Pod) {
	p.workers.Remove(pod.UID)
	if p.mirrors != nil {
		p.mirrors.Unset(pod.UID)
	}
}
