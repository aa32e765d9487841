// Package manifest is the static-pod source: it follows a directory of v1 Pod
// manifests (YAML or JSON) the way the kubelet's file source does — inotify
// plus a periodic rescan — and reports the pods that appear, change and
// disappear. Each pod gets the kubelet's static-pod identity: a UID hashed
// from its content, the node name and the file's path; its name suffixed with
// -<node name>; namespace "default" when unset; spec.nodeName set. A manifest
// that does not decode or validate is logged (file and field) and skipped; it
// never holds back the others.
package manifest

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/source"
	"berth/internal/api/scheme"
	"berth/internal/api/validation"
	"berth/internal/errdefs"
)

// Annotations the kubelet puts on static pods.
const (
	AnnotationConfigHash   = source.AnnotationConfigHash
	AnnotationConfigSource = source.AnnotationConfigSource
	AnnotationConfigSeen   = source.AnnotationConfigSeen
)

// Op is the kind of an Event.
type Op int

// The events a source reports.
const (
	// Add: a pod to run.
	Add Op = iota
	// Remove: a pod to stop and remove (its file is gone, changed or invalid).
	Remove
	// Synced: the first scan is complete; every pod the directory holds has
	// been reported. Pod is nil.
	Synced
)

// Event is one change of the desired pods. A changed manifest is reported as
// Remove of the old pod and Add of the new one (they have different UIDs, as
// upstream).
type Event struct {
	Op  Op
	Pod *v1.Pod
	// File is the manifest's path.
	File string
}

// Config configures a Source.
type Config struct {
	// Dir is the manifest directory (--pod-manifest-path). It need not exist
	// yet; files starting with "." and subdirectories are ignored.
	Dir string
	// NodeName is the node the pods run on.
	NodeName string
	// Rescan is the period of the full rescan besides inotify; default 20 s
	// (the kubelet's file check frequency).
	Rescan time.Duration
	// Logger receives the problems with manifests.
	Logger *slog.Logger
	// Now stamps kubernetes.io/config.seen; default time.Now.
	Now func() time.Time
}

// Source follows the manifest directory.
type Source struct {
	cfg   Config
	out   chan Event
	known map[string]*v1.Pod // file → pod it holds
	raw   map[string][]byte  // file → the content that pod came from
	bad   map[string]string  // file → last problem logged, to log once
}

// New validates cfg and returns a source; Run starts it.
func New(cfg Config) (*Source, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("manifest source: Dir must be set: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.NodeName == "" {
		return nil, fmt.Errorf("manifest source: NodeName must be set: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = 20 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Source{cfg: cfg, out: make(chan Event, 64), known: map[string]*v1.Pod{}, raw: map[string][]byte{}, bad: map[string]string{}}, nil
}

// Events is the stream of changes; it is closed when Run returns.
func (s *Source) Events() <-chan Event { return s.out }

// Run scans the directory, reports Synced, then follows it until ctx ends.
func (s *Source) Run(ctx context.Context) error {
	defer close(s.out)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("manifest source: inotify: %w", err)
	}
	defer w.Close()
	watching := s.watch(w)
	if !s.scan(ctx) {
		return nil
	}
	if !s.send(ctx, Event{Op: Synced}) {
		return nil
	}
	ticker := time.NewTicker(s.cfg.Rescan)
	defer ticker.Stop()
	// Editors write files in several steps: gather a burst of events into
	// one scan.
	var settle <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if !watching {
				watching = s.watch(w)
			}
			if !s.scan(ctx) {
				return nil
			}
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			if settle == nil {
				settle = time.After(20 * time.Millisecond)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			s.cfg.Logger.Warn("manifest directory watch failed, relying on the rescan", "dir", s.cfg.Dir, "err", err)
		case <-settle:
			settle = nil
			if !s.scan(ctx) {
				return nil
			}
		}
	}
}

func (s *Source) watch(w *fsnotify.Watcher) bool {
	if err := w.Add(s.cfg.Dir); err != nil {
		s.cfg.Logger.Warn("cannot watch the manifest directory, rescanning periodically", "dir", s.cfg.Dir, "err", err)
		return false
	}
	return true
}

func (s *Source) send(ctx context.Context, ev Event) bool {
	select {
	case s.out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// scan reads the directory and reports the differences to what it held.
func (s *Source) scan(ctx context.Context) bool {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.cfg.Logger.Warn("cannot read the manifest directory", "dir", s.cfg.Dir, "err", err)
		return true // keep what we have; a transient error must not stop pods
	}
	current := map[string]*v1.Pod{}
	raw := map[string][]byte{}
	names := map[string]string{} // namespace/name → file, to refuse duplicates
	type candidate struct {
		file string
		data []byte
	}
	var changed []candidate
	// Unchanged files first: a pod already running keeps its name against a
	// newcomer claiming it.
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		file := filepath.Join(s.cfg.Dir, e.Name())
		data, err := os.ReadFile(file)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.problem(file, err)
			}
			continue
		}
		if old := s.known[file]; old != nil && string(s.raw[file]) == string(data) {
			current[file], raw[file] = old, data
			names[old.Namespace+"/"+old.Name] = file
			continue
		}
		changed = append(changed, candidate{file, data})
	}
	for _, c := range changed {
		pod, err := Load(c.data, c.file, s.cfg.NodeName)
		if err != nil {
			s.problem(c.file, err)
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		if other, dup := names[key]; dup {
			s.problem(c.file, fmt.Errorf("pod %s is already defined by %s: %w", key, other, errdefs.ErrAlreadyExists))
			continue
		}
		names[key] = c.file
		pod.Annotations[AnnotationConfigSeen] = s.cfg.Now().UTC().Format(time.RFC3339Nano)
		current[c.file], raw[c.file] = pod, c.data
		delete(s.bad, c.file)
	}
	for file := range s.bad {
		if _, err := os.Stat(file); err != nil {
			delete(s.bad, file)
		}
	}
	files := make([]string, 0, len(current)+len(s.known))
	for f := range s.known {
		files = append(files, f)
	}
	for f := range current {
		if _, ok := s.known[f]; !ok {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	for _, f := range files {
		old, cur := s.known[f], current[f]
		if old != nil && (cur == nil || cur.UID != old.UID) {
			if !s.send(ctx, Event{Op: Remove, Pod: old, File: f}) {
				return false
			}
		}
	}
	for _, f := range files {
		old, cur := s.known[f], current[f]
		if cur != nil && (old == nil || cur.UID != old.UID) {
			if !s.send(ctx, Event{Op: Add, Pod: cur, File: f}) {
				return false
			}
		}
	}
	s.known, s.raw = current, raw
	return true
}

func (s *Source) problem(file string, err error) {
	msg := err.Error()
	if s.bad[file] == msg {
		return
	}
	s.bad[file] = msg
	s.cfg.Logger.Error("skipping invalid pod manifest", "file", file, "err", msg)
}

// Load decodes, defaults, names and validates the static pod in data, read
// from file, for node. Errors name the file and, for validation, the field;
// they wrap errdefs.ErrInvalidArgument.
func Load(data []byte, file, node string) (*v1.Pod, error) {
	pod, err := scheme.DecodePod(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	uid := podUID(pod, node, file)
	pod.UID = uid
	pod.Name = pod.Name + "-" + strings.ToLower(node)
	if pod.Namespace == "" {
		pod.Namespace = v1.NamespaceDefault
	}
	pod.Spec.NodeName = node
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigHash] = string(uid)
	pod.Annotations[AnnotationConfigSource] = "file"
	pod.Status = v1.PodStatus{Phase: v1.PodPending}
	if errs := validation.ValidatePod(pod); len(errs) > 0 {
		return nil, fmt.Errorf("%s: invalid pod %s/%s: %s: %w", file, pod.Namespace, pod.Name, errs.ToAggregate(), errdefs.ErrInvalidArgument)
	}
	// As the kubelet, a static pod may not depend on API objects.
	switch ref, err := apiReference(pod); {
	case err != nil:
		return nil, fmt.Errorf("%s: %w: %w", file, err, errdefs.ErrInvalidArgument)
	case ref != "":
		return nil, fmt.Errorf("%s: static pods may not reference %s: %w", file, ref, errdefs.ErrInvalidArgument)
	}
	return pod, nil
}

// UID is a static pod's UID as the kubelet derives it: an MD5 over the
// decoded manifest, then "host:<node>" and "file:<path>" — so it changes with
// the content, the node and the file, and not with comments or whitespace.
// Content that does not decode is hashed as it is.
func UID(data []byte, node, file string) types.UID {
	if pod, err := scheme.DecodePod(data); err == nil {
		return podUID(pod, node, file)
	}
	h := md5.New()
	h.Write(data)
	fmt.Fprintf(h, "host:%s", node)
	fmt.Fprintf(h, "file:%s", file)
	return types.UID(hex.EncodeToString(h.Sum(nil)))
}

// podUID hashes a freshly decoded pod (the kubelet hashes the decoded
// object; berth its JSON encoding, which is deterministic).
func podUID(pod *v1.Pod, node, file string) types.UID {
	h := md5.New()
	b, _ := json.Marshal(pod) // a decoded pod always encodes
	h.Write(b)
	fmt.Fprintf(h, "host:%s", node)
	fmt.Fprintf(h, "file:%s", file)
	return types.UID(hex.EncodeToString(h.Sum(nil)))
}
