package apiserver

import (
	"strconv"
	"sync"
)

// warningRecorder collects warnings (warning.AddWarning) for the response's
// Warning headers, as kube-apiserver sends them: `299 - "text"`.
type warningRecorder struct {
	mu    sync.Mutex
	texts []string
}

// AddWarning implements warning.Recorder.
func (r *warningRecorder) AddWarning(_, text string) {
	if text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.texts {
		if t == text {
			return
		}
	}
	r.texts = append(r.texts, text)
}

func (r *warningRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.texts))
	for _, t := range r.texts {
		out = append(out, "299 - "+strconv.Quote(t))
	}
	return out
}
