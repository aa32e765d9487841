package kubeletapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/proxy"
	streamproxy "k8s.io/apiserver/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// Query parameters of the kubelet's /exec and /attach (as the apiserver
// sends them: "1" for true), and of /portForward.
const (
	paramCommand = "command"
	paramStdin   = "input"
	paramStdout  = "output"
	paramStderr  = "error"
	paramTTY     = "tty"
	paramPort    = "port"
)

// The pods/exec, pods/attach and pods/portforward API's names for the same
// parameters (PodExecOptions, PodPortForwardOptions), accepted too, so a
// proxy passing the API's query through unchanged works.
const (
	apiParamStdin  = "stdin"
	apiParamStdout = "stdout"
	apiParamStderr = "stderr"
	apiParamPorts  = "ports"
)

// streamOptions are the streams an exec or attach asks for.
type streamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// parseStreamOptions reads the stream flags; as the kubelet, stderr is
// dropped with a TTY (the terminal carries it) and at least one stream is
// required.
func parseStreamOptions(q url.Values) (streamOptions, error) {
	var o streamOptions
	for _, p := range []struct {
		key, apiKey string
		dst         *bool
	}{{paramStdin, apiParamStdin, &o.Stdin}, {paramStdout, apiParamStdout, &o.Stdout}, {paramStderr, apiParamStderr, &o.Stderr}, {paramTTY, paramTTY, &o.TTY}} {
		v := q.Get(p.key)
		if v == "" {
			v = q.Get(p.apiKey)
			p.key = p.apiKey
		}
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("query parameter %s=%q: not a boolean", p.key, v)
		}
		*p.dst = b
	}
	if o.TTY && o.Stderr {
		o.Stderr = false
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return o, fmt.Errorf("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// parsePorts reads the port (or ports) parameters of a port-forward
// (1–65535 each).
func parsePorts(q url.Values) ([]int32, error) {
	var ports []int32
	for _, key := range []string{paramPort, apiParamPorts} {
		for _, v := range q[key] {
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("query parameter %s=%q: must be a port number between 1 and 65535", key, v)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

// podRef is the pod a streaming request names, checked against the pods the
// agent runs (the kubelet answers 404 for pods it does not know).
func (s *Server) podRef(w http.ResponseWriter, r *http.Request) (PodRef, bool) {
	ref := PodRef{Namespace: r.PathValue("ns"), Name: r.PathValue("pod"), UID: r.PathValue("uid")}
	pod, ok := s.findPod(ref.Namespace, ref.Name)
	if !ok {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return ref, false
	}
	if ref.UID != "" && string(pod.UID) != ref.UID {
		http.Error(w, "pod not found", http.StatusNotFound)
		return ref, false
	}
	ref.UID = string(pod.UID)
	return ref, true
}

// containerID is the runtime ID of the request's {container} in its pod;
// false, with the response written, when there is none.
func (s *Server) containerID(w http.ResponseWriter, r *http.Request) (string, bool) {
	ref, ok := s.podRef(w, r)
	if !ok {
		return "", false
	}
	id, err := s.cfg.Locator.ContainerID(r.Context(), ref, r.PathValue("container"))
	if err != nil {
		writeError(w, err, http.StatusInternalServerError)
		return "", false
	}
	return id, true
}

// exec serves /exec: the runtime's exec stream for the container.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := r.URL.Query()[paramCommand]
	if len(cmd) == 0 {
		http.Error(w, "query parameter command: required", http.StatusBadRequest)
		return
	}
	id, ok := s.containerID(w, r)
	if !ok {
		return
	}
	resp, err := s.cfg.Runtime.Exec(r.Context(), &runtimeapi.ExecRequest{
		ContainerId: id, Cmd: cmd, Tty: opts.TTY, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr,
	})
	if err != nil {
		writeError(w, err, http.StatusInternalServerError)
		return
	}
	s.proxyStream(w, r, resp.GetUrl(), opts)
}

// attach serves /attach: the runtime's attach stream for the container.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, ok := s.containerID(w, r)
	if !ok {
		return
	}
	resp, err := s.cfg.Runtime.Attach(r.Context(), &runtimeapi.AttachRequest{
		ContainerId: id, Tty: opts.TTY, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr,
	})
	if err != nil {
		writeError(w, err, http.StatusInternalServerError)
		return
	}
	s.proxyStream(w, r, resp.GetUrl(), opts)
}

// portForward serves /portForward: the runtime's port-forward stream for the
// pod's sandbox. Over WebSocket the client tunnels SPDY, which is
// untunnelled toward the runtime.
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	tunnel := wsstream.IsWebSocketRequestWithTunnelingProtocol(r)
	var ports []int32
	if !tunnel {
		var err error
		if ports, err = parsePorts(r.URL.Query()); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	ref, ok := s.podRef(w, r)
	if !ok {
		return
	}
	id, err := s.cfg.Locator.SandboxID(r.Context(), ref)
	if err != nil {
		writeError(w, err, http.StatusInternalServerError)
		return
	}
	resp, err := s.cfg.Runtime.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: id, Port: ports})
	if err != nil {
		writeError(w, err, http.StatusInternalServerError)
		return
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		http.Error(w, fmt.Sprintf("runtime streaming URL %q: %v", resp.GetUrl(), err), http.StatusInternalServerError)
		return
	}
	var h http.Handler = proxy.NewUpgradeAwareHandler(u, nil, false, true, s)
	if tunnel {
		h = streamproxy.NewTunnelingHandler(h)
	}
	h.ServeHTTP(w, r)
}

// proxyStream proxies an exec or attach to the runtime's streaming URL:
// the upgraded connection as it is, or, for WebSocket clients speaking
// v5.channel.k8s.io (which the runtime's server may not), translated to
// SPDY toward the runtime.
func (s *Server) proxyStream(w http.ResponseWriter, r *http.Request, rawURL string, opts streamOptions) {
	u, err := url.Parse(rawURL)
	if err != nil {
		http.Error(w, fmt.Sprintf("runtime streaming URL %q: %v", rawURL, err), http.StatusInternalServerError)
		return
	}
	var h http.Handler = proxy.NewUpgradeAwareHandler(u, nil, false, true, s)
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		h = streamproxy.NewStreamTranslatorHandler(u, nil, 0, streamproxy.Options{
			Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, Tty: opts.TTY,
		})
	}
	h.ServeHTTP(w, r)
}

// Error answers a failed proxy (the upgrade-aware handler's responder).
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		code = int(status.Status().Code)
	}
	s.cfg.Logger.Warn("proxying a stream to the runtime failed", "path", r.URL.Path, "err", err)
	http.Error(w, err.Error(), code)
}
