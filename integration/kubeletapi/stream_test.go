package kubeletapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"

	dialstream "k8s.io/apimachinery/pkg/util/httpstream"

	"berth/agent/kubeletapi"
	"berth/cri"
	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/testpki"
)

// node is the API under test with one pod running busybox httpd.
type node struct {
	url        string
	restConfig *rest.Config
	pod        v1.Pod
	// stop ends the API server's Run and returns its error.
	stop func() error

	client    *cri.Client
	sandboxID string
	sbCfg     *runtimeapi.PodSandboxConfig
}

// startContainer runs another busybox container in the pod's sandbox,
// with stdin open for a single attach when stdin is set.
func (n *node) startContainer(t *testing.T, name string, stdin bool, cmd ...string) {
	t.Helper()
	ctx := context.Background()
	id, err := n.client.CreateContainer(ctx, n.sandboxID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: nodeenv.Current().BusyboxImage},
		Command:  cmd,
		Stdin:    stdin, StdinOnce: stdin,
		Labels: cri.ContainerLabels(&n.pod, &v1.Container{Name: name}),
	}, n.sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.client.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// startNode runs a sandbox and a busybox container serving HTTP on 8080 in
// the package's containerd, labelled as the kubelet labels them, and serves
// the agent API for it.
func startNode(t *testing.T) *node {
	t.Helper()
	nodeenv.Require(t)
	env := nodeenv.Current()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client, err := cri.New(ctx, cri.Config{Endpoint: env.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	pod := v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID(fmt.Sprintf("8c3f2c0e-0000-4000-8000-%012d", time.Now().UnixNano()%1e12))},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: env.BusyboxImage}}},
	}
	logDir := t.TempDir()
	podLogDir := filepath.Join(logDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
	if err := os.MkdirAll(filepath.Join(podLogDir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PullImage(ctx, env.BusyboxImage, nil, nil); err != nil {
		t.Fatal(err)
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Hostname:     pod.Name,
		Labels:       cri.SandboxLabels(&pod),
		LogDirectory: podLogDir,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	sb, err := client.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := client.StopPodSandbox(ctx, sb); err != nil {
			t.Errorf("stop sandbox: %v", err)
		}
		if err := client.RemovePodSandbox(ctx, sb); err != nil {
			t.Errorf("remove sandbox: %v", err)
		}
	})
	id, err := client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: env.BusyboxImage},
		Command:  []string{"sh", "-c", "mkdir -p /www && echo hello-from-httpd > /www/index.html && echo httpd starting && exec httpd -f -p 8080 -h /www"},
		Labels:   cri.ContainerLabels(&pod, &pod.Spec.Containers[0]),
		LogPath:  "app/0.log",
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + id, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}

	dir := t.TempDir()
	ca := testpki.NewCA(t, "test-cluster-ca")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kubeletapi.New(kubeletapi.Config{
		Listener:     ln,
		RootDir:      dir,
		NodeName:     "node-a",
		Addresses:    []net.IP{net.IPv4(127, 0, 0, 1)},
		ClientCAFile: caFile,
		// The apiserver's identity may use nodes/proxy on this node.
		Authorizer: authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			if a.GetUser().GetName() == "system:kube-apiserver" && a.GetName() == "node-a" && a.GetSubresource() == "proxy" {
				return authorizer.DecisionAllow, "", nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		}),
		Pods:      func() []v1.Pod { return []v1.Pod{pod} },
		Locator:   kubeletapi.CRILocator{Runtime: client},
		Runtime:   client,
		PodLogDir: logDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stopServer := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(srvCtx) }()
	var stopOnce sync.Once
	var runErr error
	stop := func() error {
		stopOnce.Do(func() { stopServer(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	serverCA, err := os.ReadFile(filepath.Join(dir, "pki", "kubelet.crt"))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := ca.ClientPEM(t, "system:kube-apiserver")
	return &node{
		url: "https://" + ln.Addr().String(),
		restConfig: &rest.Config{
			Host: "https://" + ln.Addr().String(),
			TLSClientConfig: rest.TLSClientConfig{
				ServerName: "node-a", CAData: serverCA, CertData: certPEM, KeyData: keyPEM,
			},
		},
		pod:  pod,
		stop: stop,

		client: client, sandboxID: sb, sbCfg: sbCfg,
	}
}

// execURL is the kubelet's exec URL for cmd with the apiserver's stream flags.
func (n *node) execURL(stdin bool, cmd ...string) *url.URL {
	q := url.Values{"command": cmd, "output": {"1"}, "error": {"1"}}
	if stdin {
		q.Set("input", "1")
	}
	u, _ := url.Parse(n.url + "/exec/default/web/app?" + q.Encode())
	return u
}

func (n *node) spdyExec(t *testing.T, u *url.URL) remotecommand.Executor {
	t.Helper()
	ex, err := remotecommand.NewSPDYExecutor(n.restConfig, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func (n *node) wsExec(t *testing.T, u *url.URL, protocols ...string) remotecommand.Executor {
	t.Helper()
	var ex remotecommand.Executor
	var err error
	if len(protocols) == 0 {
		ex, err = remotecommand.NewWebSocketExecutor(n.restConfig, "GET", u.String())
	} else {
		ex, err = remotecommand.NewWebSocketExecutorForProtocols(n.restConfig, "GET", u.String(), protocols...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// run streams an exec and returns stdout, stderr and the exit code.
func run(t *testing.T, ex remotecommand.Executor, stdin io.Reader) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Stderr: &stderr})
	code := 0
	var exitErr utilexec.CodeExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.Code
	case err != nil:
		t.Fatalf("exec: %v (stdout %q, stderr %q)", err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

func TestExec(t *testing.T) {
	n := startNode(t)
	script := []string{"sh", "-c", "echo out:$(hostname); echo oops >&2; exit 3"}
	stdinScript := []string{"sh", "-c", "read line; echo got:$line; exit 0"}
	for _, tc := range []struct {
		name string
		exec func(u *url.URL) remotecommand.Executor
	}{
		{"SPDY", func(u *url.URL) remotecommand.Executor { return n.spdyExec(t, u) }},
		{"WebSocket v5 (translated)", func(u *url.URL) remotecommand.Executor { return n.wsExec(t, u) }},
		{"WebSocket v4 (passed through)", func(u *url.URL) remotecommand.Executor { return n.wsExec(t, u, "v4.channel.k8s.io") }},
		{"kubectl's fallback executor", func(u *url.URL) remotecommand.Executor {
			ex, err := remotecommand.NewFallbackExecutor(n.wsExec(t, u), n.spdyExec(t, u), httpstream.IsUpgradeFailure)
			if err != nil {
				t.Fatal(err)
			}
			return ex
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tc.exec(n.execURL(false, script...)), nil)
			if stdout != "out:web\n" || stderr != "oops\n" || code != 3 {
				t.Errorf("exec = stdout %q stderr %q exit %d; want out:web, oops, 3", stdout, stderr, code)
			}
			stdout, _, code = run(t, tc.exec(n.execURL(true, stdinScript...)), strings.NewReader("ping\n"))
			if stdout != "got:ping\n" || code != 0 {
				t.Errorf("exec with stdin = %q exit %d; want got:ping, 0", stdout, code)
			}
		})
	}
}

func TestAttach(t *testing.T) {
	n := startNode(t)
	for _, tc := range []struct {
		name string
		exec func(u *url.URL) remotecommand.Executor
	}{
		{"SPDY", func(u *url.URL) remotecommand.Executor { return n.spdyExec(t, u) }},
		{"WebSocket v5 (translated)", func(u *url.URL) remotecommand.Executor { return n.wsExec(t, u) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "reader-" + strings.ToLower(strings.Fields(tc.name)[0])
			n.startContainer(t, name, true, "sh", "-c", `while read l; do echo "attached:$l"; done; echo bye`)
			u, _ := url.Parse(n.url + "/attach/default/web/" + name + "?input=1&output=1&error=1")
			// The attach's stdin closing closes the container's (stdinOnce):
			// the loop ends, the container exits and the stream ends.
			stdout, _, code := run(t, tc.exec(u), strings.NewReader("one\ntwo\n"))
			if stdout != "attached:one\nattached:two\nbye\n" || code != 0 {
				t.Fatalf("attach = %q exit %d; want both lines echoed, then bye", stdout, code)
			}
		})
	}
}

func TestExecUnknownCommandFails(t *testing.T) {
	n := startNode(t)
	_, _, code := run(t, n.spdyExec(t, n.execURL(false, "sh", "-c", "no-such-command")), nil)
	if code != 127 {
		t.Fatalf("exit code of an unknown command = %d, want 127", code)
	}
}

func TestStopEndsStreamsInProgress(t *testing.T) {
	n := startNode(t)
	ex := n.spdyExec(t, n.execURL(false, "sh", "-c", "echo started; exec sleep 600"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	ended := make(chan error, 1)
	go func() {
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: pw, Stderr: io.Discard})
		pw.Close()
		ended <- err
	}()
	line := make([]byte, len("started\n"))
	if _, err := io.ReadFull(pr, line); err != nil || string(line) != "started\n" {
		t.Fatalf("exec output = %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := n.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the exec stream outlived the API server")
	}
}

func TestPortForwardToHTTPD(t *testing.T) {
	n := startNode(t)
	u, _ := url.Parse(n.url + "/portForward/default/web")
	spdyDialer := func(t *testing.T) dialstream.Dialer {
		rt, upgrader, err := spdy.RoundTripperFor(n.restConfig)
		if err != nil {
			t.Fatal(err)
		}
		return spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u)
	}
	for _, tc := range []struct {
		name   string
		dialer func(t *testing.T) dialstream.Dialer
	}{
		{"SPDY", spdyDialer},
		{"WebSocket tunnel", func(t *testing.T) dialstream.Dialer {
			d, err := portforward.NewSPDYOverWebsocketDialer(u, n.restConfig)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop, ready := make(chan struct{}), make(chan struct{})
			var out, errOut bytes.Buffer
			pf, err := portforward.New(tc.dialer(t), []string{"0:8080"}, stop, ready, &out, &errOut)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- pf.ForwardPorts() }()
			defer func() {
				close(stop)
				if err := <-done; err != nil {
					t.Errorf("ForwardPorts: %v", err)
				}
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("ForwardPorts ended before ready: %v (%s)", err, errOut.String())
			case <-time.After(time.Minute):
				t.Fatal("port-forward not ready within a minute")
			}
			ports, err := pf.GetPorts()
			if err != nil || len(ports) != 1 {
				t.Fatalf("GetPorts = %v, %v", ports, err)
			}
			target := fmt.Sprintf("http://127.0.0.1:%d/index.html", ports[0].Local)
			// httpd may still be starting: poll until it answers.
			deadline := time.Now().Add(30 * time.Second)
			for {
				body, err := harness.HTTPGet(target)
				if err == nil {
					if body != "hello-from-httpd\n" {
						t.Fatalf("GET through the port-forward = %q", body)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("GET through the port-forward: %v (port-forward errors: %s)", err, errOut.String())
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

func TestContainerLogsFromContainerd(t *testing.T) {
	n := startNode(t)
	c := &http.Client{Transport: mustTransport(t, n.restConfig)}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get(n.url + "/containerLogs/default/web/app?timestamps=false")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && string(body) == "httpd starting\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /containerLogs = %d %q, want httpd starting", resp.StatusCode, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustTransport(t *testing.T, cfg *rest.Config) http.RoundTripper {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
