package apiserver

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// minWatchTimeout is kube-apiserver's --min-request-timeout: a watch without
// timeoutSeconds lasts between it and twice it, so clients spread re-watches.
const minWatchTimeout = 30 * time.Minute

// serveWatch streams watch events: newline-separated JSON (or YAML
// documents, or length-prefixed protobuf frames) of WatchEvent objects.
func (h *Handler) serveWatch(w http.ResponseWriter, r *http.Request, res *Resource) {
	opts, err := h.listOptions(r, res)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	opts.Watch = true
	mt, _, err := negotiation.NegotiateOutputMediaType(r, h.serializer(r.Context()), restrictions{})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	info, err := negotiation.NegotiateOutputMediaTypeStream(r, h.serializer(r.Context()), restrictions{})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	timeout := minWatchTimeout + time.Duration(rand.Int64N(int64(minWatchTimeout)))
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	if mt.Convert != nil && mt.Convert.Kind != "Table" && mt.Convert.Kind != "PartialObjectMetadata" {
		h.writeError(w, r, negotiation.NewNotAcceptableConversionError(mt.Convert.String(), []string{"Table", "PartialObjectMetadata"}))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()

	watcher, err := res.Store.Watch(ctx, opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	defer watcher.Stop()

	flusher, _ := w.(http.Flusher)
	mediaType := info.MediaType
	if mediaType != runtime.ContentTypeJSON {
		mediaType += ";stream=watch"
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}

	embedded := h.serializer(r.Context()).EncoderForVersion(info.Serializer, res.GroupVersion)
	statusEncoder := h.codecs.EncoderForVersion(info.Serializer, coreV1)
	metaEncoder := h.codecs.EncoderForVersion(info.Serializer, metaV1)
	framed := info.StreamSerializer.Framer.NewFrameWriter(w)
	enc := streaming.NewEncoder(framed, info.StreamSerializer.Serializer)
	asTable := mt.Convert != nil && mt.Convert.Kind == "Table"
	// Metadata-only informers watch as=PartialObjectMetadata: every
	// object, bookmarks included, is sent as its metadata.
	asMetadata := mt.Convert != nil && mt.Convert.Kind == "PartialObjectMetadata"
	var buf bytes.Buffer
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return
			}
			buf.Reset()
			obj := ev.Object
			e := embedded
			switch {
			case ev.Type == watch.Error:
				e = statusEncoder
			case asTable && ev.Type != watch.Bookmark:
				t, err := h.table(r, res, obj)
				if err != nil {
					h.log.Warn("watch: table conversion", "resource", res.Resource, "err", err)
					return
				}
				obj, e = t, metaEncoder
			case asMetadata:
				m, err := partialMetadata(obj)
				if err != nil {
					h.log.Warn("watch: metadata conversion", "resource", res.Resource, "err", err)
					return
				}
				obj, e = m, metaEncoder
			}
			if err := e.Encode(obj, &buf); err != nil {
				h.log.Warn("watch: encoding event", "resource", res.Resource, "err", err)
				return
			}
			out := &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: buf.Bytes()}}
			if err := enc.Encode(out); err != nil {
				return
			}
			if flusher != nil && len(watcher.ResultChan()) == 0 {
				flusher.Flush()
			}
		}
	}
}
