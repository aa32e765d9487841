package resources

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// logWebSocket serves pods/log to a WebSocket client as kube-apiserver
// does: the apiserver reads the log from the agent over plain HTTP and
// writes it as WebSocket messages, raw ("binary.k8s.io", or no protocol)
// or base64-encoded ("base64.binary.k8s.io"), closing the socket at the end
// of the log. An agent refusal (unknown container, no log yet) is answered
// before the upgrade, as a Status with the agent's code.
func (p *nodeProxy) logWebSocket(ctx context.Context, w http.ResponseWriter, r *http.Request, ns, name string) error {
	protocols := wsstream.NewDefaultReaderProtocols()
	if err := checkSubprotocols(r, protocols); err != nil {
		return err
	}
	target, err := p.target(ctx, r, ns, name, "/containerLogs", true)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	resp, err := (&http.Client{Transport: p.transport}).Do(req)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("error dialing backend: %v", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		switch resp.StatusCode {
		case http.StatusBadRequest:
			return apierrors.NewBadRequest(string(msg))
		case http.StatusInternalServerError:
			return apierrors.NewInternalError(errors.New(string(msg)))
		}
		return apierrors.NewGenericServerResponse(resp.StatusCode, "", podsResource, name, string(msg), 0, false)
	}
	// Copy ends when the log ends or the client goes away (the request's
	// context then ends the agent's stream). Its error comes after the
	// connection was taken over, when no response can be written any more
	// (kube-apiserver only logs it): a handshake refusal it answers itself.
	_ = wsstream.NewReader(&dataBeforeEOF{r: resp.Body}, true, protocols).Copy(hijacker{w}, r)
	return nil
}

// dataBeforeEOF returns a read's data and its io.EOF in two calls: the
// WebSocket copy drops the data of a read that also reports the end (as
// the last read of a response with a known length does).
type dataBeforeEOF struct {
	r   io.Reader
	eof bool
}

func (d *dataBeforeEOF) Read(p []byte) (int, error) {
	if d.eof {
		return 0, io.EOF
	}
	n, err := d.r.Read(p)
	if n > 0 && err == io.EOF {
		d.eof = true
		return n, nil
	}
	return n, err
}

// checkSubprotocols refuses, with a 400 before any upgrade, a WebSocket
// request offering none of the supported subprotocols (none offered
// counts as ""): the WebSocket server would refuse the handshake without
// ever ending the copy.
func checkSubprotocols[T any](r *http.Request, supported map[string]T) error {
	var offered []string
	for _, h := range r.Header.Values("Sec-Websocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			offered = append(offered, strings.TrimSpace(p))
		}
	}
	if len(offered) == 0 {
		offered = []string{""}
	}
	for _, p := range offered {
		if _, ok := supported[p]; ok {
			return nil
		}
	}
	return apierrors.NewBadRequest(fmt.Sprintf("requested WebSocket subprotocols %q are not supported", offered))
}

// hijacker lets the WebSocket server take over the connection through
// the apiserver's response writer wrappers (which unwrap, but do not
// implement http.Hijacker themselves).
type hijacker struct{ http.ResponseWriter }

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}
