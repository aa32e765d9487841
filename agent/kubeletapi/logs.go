package kubeletapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri/crilog"
	"berth/internal/errdefs"
)

// containerLogs serves GET /containerLogs/{ns}/{pod}/{container} from the
// kubelet's log layout <PodLogDir>/<ns>_<name>_<uid>/<container>/<N>.log.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	opts, err := parseLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := validateLogOptions(opts); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	pod, ok := s.findPod(ns, name)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
		return
	}
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, name), http.StatusNotFound)
		return
	}
	path, containerID, err := s.logFile(pod, container, opts.Previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ropts := crilog.OptionsFromPodLogOptions(opts, s.cfg.Now())
	ropts.PollInterval = s.cfg.LogPollInterval
	ropts.Logger = s.cfg.Logger
	if ropts.Follow {
		ropts.Running = s.runningCheck(containerID)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fw := &flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok {
		fw.f = f
	}
	err = crilog.ReadFile(r.Context(), path, ropts, fw)
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	case !fw.wrote:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		s.cfg.Logger.Debug("serving container log failed", "pod", ns+"/"+name, "container", container, "err", err)
	}
}

// parseLogOptions reads the query parameters of v1.PodLogOptions (and the
// kubelet's legacy "tail", where "all" means no limit).
func parseLogOptions(q url.Values) (*v1.PodLogOptions, error) {
	opts := &v1.PodLogOptions{}
	var err error
	boolParam := func(key string, dst *bool) {
		if v := q.Get(key); v != "" && err == nil {
			if *dst, err = strconv.ParseBool(v); err != nil {
				err = fmt.Errorf("query parameter %s=%q: not a boolean", key, v)
			}
		}
	}
	intParam := func(key string, dst **int64) {
		if v := q.Get(key); v != "" && err == nil {
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil {
				err = fmt.Errorf("query parameter %s=%q: not an integer", key, v)
				return
			}
			*dst = &n
		}
	}
	boolParam("follow", &opts.Follow)
	boolParam("previous", &opts.Previous)
	boolParam("timestamps", &opts.Timestamps)
	intParam("sinceSeconds", &opts.SinceSeconds)
	intParam("limitBytes", &opts.LimitBytes)
	if tail := q.Get("tail"); tail != "" {
		q = maps.Clone(q)
		if tail == "all" {
			q.Del("tailLines")
		} else {
			q.Set("tailLines", tail)
		}
	}
	intParam("tailLines", &opts.TailLines)
	if v := q.Get("sinceTime"); v != "" && err == nil {
		t, perr := time.Parse(time.RFC3339, v)
		if perr != nil {
			err = fmt.Errorf("query parameter sinceTime=%q: not an RFC 3339 time", v)
		} else {
			mt := metav1.NewTime(t)
			opts.SinceTime = &mt
		}
	}
	if v := q.Get("stream"); v != "" && err == nil {
		stream := v
		opts.Stream = &stream
	}
	return opts, err
}

// validateLogOptions checks what ValidatePodLogOptions checks.
func validateLogOptions(o *v1.PodLogOptions) error {
	switch {
	case o.TailLines != nil && *o.TailLines < 0:
		return fmt.Errorf("tailLines: Invalid value: %d: must be greater than or equal to 0", *o.TailLines)
	case o.LimitBytes != nil && *o.LimitBytes < 1:
		return fmt.Errorf("limitBytes: Invalid value: %d: must be greater than 0", *o.LimitBytes)
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		return fmt.Errorf("sinceSeconds: Invalid value: %d: must be greater than 0", *o.SinceSeconds)
	case o.SinceSeconds != nil && o.SinceTime != nil:
		return errors.New("sinceSeconds: Forbidden: at most one of sinceTime or sinceSeconds may be specified")
	case o.Stream != nil && *o.Stream != v1.LogStreamAll && *o.Stream != v1.LogStreamStdout && *o.Stream != v1.LogStreamStderr:
		return fmt.Errorf("stream: Unsupported value: %q: supported values: %q, %q, %q", *o.Stream, v1.LogStreamAll, v1.LogStreamStdout, v1.LogStreamStderr)
	case o.Stream != nil && *o.Stream != v1.LogStreamAll && o.TailLines != nil:
		return errors.New("tailLines: Forbidden: tailLines is not supported when stream is set to Stdout or Stderr")
	}
	return nil
}

// hasContainer reports whether the pod's spec has a container (regular,
// init or ephemeral) of that name.
func hasContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// containerStatus finds the status of the named container in any of the
// pod's status lists.
func containerStatus(pod *v1.Pod, name string) (*v1.ContainerStatus, bool) {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], true
			}
		}
	}
	return nil, false
}

// logFile picks the log file to serve, deciding as the kubelet does from the
// container's status which instance is meant: with previous the last
// terminated one, else the running one, else the latest that ran. It returns
// the runtime ID of that instance ("" when unknown) for following.
func (s *Server) logFile(pod *v1.Pod, container string, previous bool) (path, containerID string, err error) {
	cs, ok := containerStatus(pod, container)
	if !ok {
		return "", "", fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	}
	last := cs.LastTerminationState.Terminated
	state := cs.State
	// current: the instance whose file has the highest number; back: how many
	// instances before it the wanted one is.
	back := 0
	switch {
	case previous:
		if last == nil {
			return "", "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		if state.Running != nil || (state.Terminated != nil && state.Terminated.ContainerID != "") {
			back = 1 // the current instance has a file of its own
		}
		containerID = last.ContainerID
	case state.Running != nil:
		containerID = cs.ContainerID
	case state.Terminated != nil:
		containerID = state.Terminated.ContainerID
		if containerID == "" && last == nil {
			return "", "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
	case last != nil:
		containerID = last.ContainerID
	case state.Waiting != nil:
		switch reason := state.Waiting.Reason; reason {
		case "ErrImagePull":
			return "", "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case "ImagePullBackOff":
			return "", "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		default:
			return "", "", fmt.Errorf("container %q in pod %q is waiting to start: %s", container, pod.Name, reason)
		}
	default:
		return "", "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
	}
	dir := filepath.Join(s.cfg.PodLogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container)
	attempts, err := logAttempts(dir)
	if err != nil {
		return "", "", err
	}
	if len(attempts) <= back {
		if previous {
			return "", "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return "", "", fmt.Errorf("container %q in pod %q has no log file in %s: %w", container, pod.Name, dir, errdefs.ErrNotFound)
	}
	n := attempts[len(attempts)-1-back]
	return filepath.Join(dir, strconv.Itoa(n)+".log"), runtimeID(containerID), nil
}

// logAttempts lists the restart numbers N of the N.log files in dir,
// ascending (rotated N.log.<time> files are not instances).
func logAttempts(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read log directory: %w", err)
	}
	var out []int
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(base); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// runtimeID strips the "<runtime>://" prefix of a status's container ID.
func runtimeID(containerID string) string {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		return id
	}
	return containerID
}

// runningCheck asks the runtime whether the container still runs, so a
// followed log ends once it has exited and its file is read to the end.
func (s *Server) runningCheck(containerID string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		if containerID == "" {
			return false, nil
		}
		resp, err := s.cfg.Runtime.ContainerStatus(ctx, containerID, false)
		if errors.Is(err, errdefs.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		st := resp.GetStatus().GetState()
		return st == runtimeapi.ContainerState_CONTAINER_RUNNING || st == runtimeapi.ContainerState_CONTAINER_CREATED, nil
	}
}

// flushWriter flushes after each write so followed logs reach the client
// as they are read.
type flushWriter struct {
	w     http.ResponseWriter
	f     http.Flusher
	wrote bool
}

func (fw *flushWriter) Write(p []byte) (int, error) {
	n, err := fw.w.Write(p)
	if n > 0 {
		fw.wrote = true
	}
	if fw.f != nil {
		fw.f.Flush()
	}
	return n, err
}
