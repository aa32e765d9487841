// Package podruntime is the agent's runtime cache: what the container
// runtime holds for pods, read over CRI into podstate values — sandboxes and
// containers grouped by the pod UID label the kubelet conventions put on
// them, with the details only the status calls give (exit codes, reasons,
// IPs) and the termination message read from the file the container wrote —
// and kept with the time of the relist that saw it (Cache), so the PLEG
// lists the runtime once and the pod workers read from it. Status answers
// are cached per container ID and state, since a container in a given state
// does not change.
package podruntime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/podstate"
	"berth/cri"
	"berth/cri/crilog"
	"berth/internal/errdefs"
)

// Upstream's limits on termination messages.
const (
	maxTerminationMessageBytes = 4096
	fallbackLogLines           = 80
	fallbackLogBytes           = 2048
)

// Reader reads pod state from a CRI runtime. It is safe for concurrent use.
type Reader struct {
	cri *cri.Client

	mu        sync.Mutex
	sandboxes map[string]cachedSandbox
	ctrs      map[string]cachedContainer
}

type cachedSandbox struct {
	state runtimeapi.PodSandboxState
	sb    podstate.Sandbox
}

type cachedContainer struct {
	state runtimeapi.ContainerState
	c     podstate.Container
}

// New returns a reader over client.
func New(client *cri.Client) *Reader {
	return &Reader{cri: client, sandboxes: map[string]cachedSandbox{}, ctrs: map[string]cachedContainer{}}
}

// Pod reads one pod's sandboxes and containers, newest first. A pod the
// runtime holds nothing of gives an empty Pod.
func (r *Reader) Pod(ctx context.Context, uid types.UID) (*podstate.Pod, error) {
	sel := map[string]string{cri.LabelPodUID: string(uid)}
	sbs, err := r.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	ctrs, err := r.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	pods, err := r.build(ctx, sbs, ctrs)
	if err != nil {
		return nil, err
	}
	if p := pods[uid]; p != nil {
		return p, nil
	}
	return &podstate.Pod{UID: uid}, nil
}

// All reads every pod the runtime holds that carries a pod UID label.
func (r *Reader) All(ctx context.Context) (map[types.UID]*podstate.Pod, error) {
	sbs, err := r.cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	ctrs, err := r.cri.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	pods, err := r.build(ctx, sbs, ctrs)
	if err != nil {
		return nil, err
	}
	r.prune(sbs, ctrs)
	return pods, nil
}

// Forget drops the cached statuses of a pod's containers and sandboxes.
func (r *Reader) Forget(p *podstate.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range p.Sandboxes {
		delete(r.sandboxes, s.ID)
	}
	for _, c := range p.Containers {
		delete(r.ctrs, c.ID)
	}
}

func (r *Reader) build(ctx context.Context, sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) (map[types.UID]*podstate.Pod, error) {
	pods := map[types.UID]*podstate.Pod{}
	get := func(uid types.UID, name, ns string) *podstate.Pod {
		p := pods[uid]
		if p == nil {
			p = &podstate.Pod{UID: uid, Name: name, Namespace: ns}
			pods[uid] = p
		}
		return p
	}
	for _, s := range sbs {
		info := cri.ParseSandboxLabels(s.GetLabels())
		if info.PodUID == "" {
			continue
		}
		sb, err := r.sandbox(ctx, s)
		if err != nil {
			return nil, err
		}
		p := get(info.PodUID, info.PodName, info.PodNamespace)
		p.Sandboxes = append(p.Sandboxes, sb)
	}
	for _, c := range ctrs {
		uid := types.UID(c.GetLabels()[cri.LabelPodUID])
		if uid == "" {
			continue
		}
		pc, err := r.container(ctx, c)
		if err != nil {
			return nil, err
		}
		p := get(uid, c.GetLabels()[cri.LabelPodName], c.GetLabels()[cri.LabelPodNamespace])
		p.Containers = append(p.Containers, pc)
	}
	for _, p := range pods {
		p.Sort()
	}
	return pods, nil
}

func (r *Reader) sandbox(ctx context.Context, s *runtimeapi.PodSandbox) (podstate.Sandbox, error) {
	r.mu.Lock()
	c, ok := r.sandboxes[s.GetId()]
	r.mu.Unlock()
	if ok && c.state == s.GetState() {
		return c.sb, nil
	}
	resp, err := r.cri.PodSandboxStatus(ctx, s.GetId(), false)
	if errdefs.IsNotFound(err) {
		return podstate.SandboxFromCRI(s, nil), nil // removed meanwhile
	}
	if err != nil {
		return podstate.Sandbox{}, err
	}
	sb := podstate.SandboxFromCRI(s, resp.GetStatus())
	r.mu.Lock()
	r.sandboxes[s.GetId()] = cachedSandbox{state: resp.GetStatus().GetState(), sb: sb}
	r.mu.Unlock()
	return sb, nil
}

func (r *Reader) container(ctx context.Context, c *runtimeapi.Container) (podstate.Container, error) {
	r.mu.Lock()
	cached, ok := r.ctrs[c.GetId()]
	r.mu.Unlock()
	if ok && cached.state == c.GetState() {
		return cached.c, nil
	}
	resp, err := r.cri.ContainerStatus(ctx, c.GetId(), false)
	if errdefs.IsNotFound(err) {
		return podstate.ContainerFromCRI(c, nil), nil
	}
	if err != nil {
		return podstate.Container{}, err
	}
	st := resp.GetStatus()
	pc := podstate.ContainerFromCRI(c, st)
	if pc.State == podstate.ContainerExited {
		pc.Message = terminationMessage(ctx, pc, st)
	}
	r.mu.Lock()
	r.ctrs[c.GetId()] = cachedContainer{state: st.GetState(), c: pc}
	r.mu.Unlock()
	return pc, nil
}

// prune drops cache entries of objects the runtime no longer lists.
func (r *Reader) prune(sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) {
	live := make(map[string]bool, len(sbs)+len(ctrs))
	for _, s := range sbs {
		live[s.GetId()] = true
	}
	for _, c := range ctrs {
		live[c.GetId()] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.sandboxes {
		if !live[id] {
			delete(r.sandboxes, id)
		}
	}
	for id := range r.ctrs {
		if !live[id] {
			delete(r.ctrs, id)
		}
	}
}

// terminationMessage is what an exited container left: the file mounted at
// its terminationMessagePath, or — with FallbackToLogsOnError, nothing in the
// file and a failure — the tail of its log; the runtime's own message when
// neither says anything.
func terminationMessage(ctx context.Context, c podstate.Container, st *runtimeapi.ContainerStatus) string {
	if c.TerminationMessagePath != "" {
		for _, m := range st.GetMounts() {
			if m.GetContainerPath() != c.TerminationMessagePath || m.GetHostPath() == "" {
				continue
			}
			if msg, err := readLimited(m.GetHostPath(), maxTerminationMessageBytes); err == nil && msg != "" {
				return msg
			}
		}
	}
	if c.TerminationMessagePolicy == string(v1.TerminationMessageFallbackToLogsOnError) && c.ExitCode != 0 && c.LogPath != "" {
		lines, limit := int64(fallbackLogLines), int64(fallbackLogBytes)
		var buf bytes.Buffer
		if err := crilog.ReadFile(ctx, c.LogPath, crilog.Options{TailLines: &lines}, &buf); err == nil && buf.Len() > 0 {
			b := buf.Bytes()
			if int64(len(b)) > limit {
				b = b[int64(len(b))-limit:]
			}
			return string(b)
		}
	}
	return c.Message
}

func readLimited(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return "", fmt.Errorf("read termination message %s: %w", path, err)
	}
	return string(b), nil
}
