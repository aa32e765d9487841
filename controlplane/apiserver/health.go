package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/json"

	berthversion "berth/internal/version"
)

// serveHealth answers /healthz, /livez and /readyz ("ok", or 500 with the
// reason when not ready). They need no credential, as probes call them.
func (h *Handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Path != "/livez" && h.cfg.Ready != nil {
		if err := h.cfg.Ready(); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "[-]%s failed: %v\n%s check failed\n", "storage", err, strings.TrimPrefix(r.URL.Path, "/"))
			return
		}
	}
	fmt.Fprint(w, "ok")
}

// serveVersion answers /version with the Kubernetes release berth implements.
func (h *Handler) serveVersion(w http.ResponseWriter, _ *http.Request) {
	info := berthversion.Info()
	data, err := json.Marshal(info)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
