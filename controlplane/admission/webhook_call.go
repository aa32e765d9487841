package admission

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/admission"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"k8s.io/apiserver/pkg/util/proxy"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// defaultWebhookTimeout applies when a webhook sets no timeoutSeconds.
const defaultWebhookTimeout = 10 * time.Second

// maxResponseSize bounds a webhook's response body.
const maxResponseSize = 3 << 20

// ServiceResolver turns a webhook's clientConfig.service into the URL
// (scheme and host:port) to call.
type ServiceResolver func(namespace, name string, port int32) (*url.URL, error)

// DefaultServiceResolver resolves to https://NAME.NAMESPACE.svc:PORT,
// for clusters whose DNS names Services on the server's host.
func DefaultServiceResolver(namespace, name string, port int32) (*url.URL, error) {
	return &url.URL{Scheme: "https", Host: name + "." + namespace + ".svc:" + strconv.Itoa(int(port))}, nil
}

// EndpointServiceResolver resolves a Service to one of its ready
// endpoints, found through its EndpointSlices (the service port's name
// picks the endpoint port), as kube-apiserver does with
// --enable-aggregator-routing. berth runs no service proxy on the server's
// host, so a cluster IP would not route from there.
func EndpointServiceResolver(services corelisters.ServiceLister, slices discoverylisters.EndpointSliceLister) ServiceResolver {
	return func(namespace, name string, port int32) (*url.URL, error) {
		getter, err := proxy.NewEndpointSliceListerGetter(slices)
		if err != nil {
			return nil, err
		}
		return proxy.ResolveEndpoint(services, getter, namespace, name, port)
	}
}

// webhookTarget is where and how one webhook is called.
type webhookTarget struct {
	url *url.URL
	// serverName is what the serving certificate must name: the URL's
	// host, or NAME.NAMESPACE.svc for a service reference.
	serverName string
}

// webhookClients caches one HTTP client per CA bundle and server name.
type webhookClients struct {
	mu      sync.Mutex
	clients map[[32]byte]*http.Client
}

func (c *webhookClients) get(caBundle []byte, serverName string) (*http.Client, error) {
	key := sha256.Sum256(append(append([]byte(serverName), 0), caBundle...))
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[key]; ok {
		return cl, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, fmt.Errorf("clientConfig.caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16, Proxy: nil}}
	if c.clients == nil {
		c.clients = map[[32]byte]*http.Client{}
	}
	c.clients[key] = cl
	return cl, nil
}

// target is where a webhook is called: clientConfig.url as given, or
// clientConfig.service resolved (port default 443, path appended).
func target(w *webhookSpec, resolve ServiceResolver) (*webhookTarget, error) {
	cc := w.clientConfig
	switch {
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, fmt.Errorf("clientConfig.url: %w", err)
		}
		if u.Scheme != "https" {
			return nil, fmt.Errorf("clientConfig.url: scheme must be https, got %q", u.Scheme)
		}
		return &webhookTarget{url: u, serverName: u.Hostname()}, nil
	case cc.Service != nil:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		u, err := resolve(cc.Service.Namespace, cc.Service.Name, port)
		if err != nil {
			return nil, fmt.Errorf("clientConfig.service %s/%s port %d: %w", cc.Service.Namespace, cc.Service.Name, port, err)
		}
		if cc.Service.Path != nil {
			u.Path = *cc.Service.Path
		}
		return &webhookTarget{url: u, serverName: cc.Service.Name + "." + cc.Service.Namespace + ".svc"}, nil
	default:
		return nil, fmt.Errorf("clientConfig needs url or service")
	}
}

// encodeObject renders an object as the webhook sees it, with apiVersion
// and kind set (gvk when the object has none).
func encodeObject(obj runtime.Object, gvkOf func() (string, string)) ([]byte, error) {
	if obj == nil || (reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil()) {
		return nil, nil
	}
	c := obj.DeepCopyObject()
	if c.GetObjectKind().GroupVersionKind().Empty() {
		apiVersion, kind := gvkOf()
		tm := metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
		c.GetObjectKind().SetGroupVersionKind(tm.GroupVersionKind())
	}
	return json.Marshal(c)
}

// requestObject encodes the request's object (or old object) as of kind a.GetKind().
func requestObject(obj runtime.Object, a admission.Attributes) ([]byte, error) {
	return encodeObject(obj, func() (string, string) { return a.GetKind().GroupVersion().String(), a.GetKind().Kind })
}

// optionsObject encodes the operation's options (CreateOptions,
// UpdateOptions, DeleteOptions, ...) as meta.k8s.io/v1 objects.
func optionsObject(opts runtime.Object) ([]byte, error) {
	return encodeObject(opts, func() (string, string) {
		return metav1.SchemeGroupVersion.String(), reflect.Indirect(reflect.ValueOf(opts)).Type().Name()
	})
}

// newReview builds the AdmissionReview v1 request for a.
func newReview(a admission.Attributes) (*admissionv1.AdmissionReview, error) {
	obj, err := requestObject(a.GetObject(), a)
	if err != nil {
		return nil, fmt.Errorf("encode object: %w", err)
	}
	old, err := requestObject(a.GetOldObject(), a)
	if err != nil {
		return nil, fmt.Errorf("encode old object: %w", err)
	}
	opts, err := optionsObject(a.GetOperationOptions())
	if err != nil {
		return nil, fmt.Errorf("encode options: %w", err)
	}
	kind := metav1.GroupVersionKind{Group: a.GetKind().Group, Version: a.GetKind().Version, Kind: a.GetKind().Kind}
	res := metav1.GroupVersionResource{Group: a.GetResource().Group, Version: a.GetResource().Version, Resource: a.GetResource().Resource}
	dryRun := a.IsDryRun()
	req := &admissionv1.AdmissionRequest{
		UID:                types.UID(uuid.NewUUID()),
		Kind:               kind,
		Resource:           res,
		SubResource:        a.GetSubresource(),
		RequestKind:        &kind,
		RequestResource:    &res,
		RequestSubResource: a.GetSubresource(),
		Name:               a.GetName(),
		Namespace:          a.GetNamespace(),
		Operation:          admissionv1.Operation(a.GetOperation()),
		Object:             runtime.RawExtension{Raw: obj},
		OldObject:          runtime.RawExtension{Raw: old},
		DryRun:             &dryRun,
		Options:            runtime.RawExtension{Raw: opts},
	}
	if u := a.GetUserInfo(); u != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
		if extra := u.GetExtra(); len(extra) > 0 {
			req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range extra {
				req.UserInfo.Extra[k] = v
			}
		}
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	}, nil
}

// callFailure is a webhook call that did not produce a usable answer
// (unreachable, timed out, an error status, an invalid response): the
// webhook's failurePolicy decides whether it refuses the request.
type callFailure struct {
	webhook string
	reason  error
}

func (e *callFailure) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.webhook, e.reason)
}

func (e *callFailure) Unwrap() error { return e.reason }

// callWebhook sends the review and returns the webhook's verified
// response. Errors are *callFailure.
func callWebhook(ctx context.Context, w *webhookSpec, a admission.Attributes, clients *webhookClients, resolve ServiceResolver, mutating bool) (*webhookrequest.AdmissionResponse, error) {
	fail := func(format string, args ...any) error {
		return &callFailure{webhook: w.name, reason: fmt.Errorf(format, args...)}
	}
	v1OK := false
	for _, v := range w.reviewVersions {
		v1OK = v1OK || v == "v1"
	}
	if !v1OK {
		return nil, fail("webhook does not accept v1 AdmissionReview (admissionReviewVersions %v)", w.reviewVersions)
	}
	tgt, err := target(w, resolve)
	if err != nil {
		return nil, fail("%w", err)
	}
	client, err := clients.get(w.clientConfig.CABundle, tgt.serverName)
	if err != nil {
		return nil, fail("%w", err)
	}
	timeout := defaultWebhookTimeout
	if w.timeoutSeconds != nil && *w.timeoutSeconds > 0 {
		timeout = time.Duration(*w.timeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// As upstream, the webhook learns its deadline (whole seconds, rounded up).
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left > 0 {
			if whole := left.Truncate(time.Second); whole != left {
				left = whole + time.Second
			}
			q := tgt.url.Query()
			q.Set("timeout", left.String())
			tgt.url.RawQuery = q.Encode()
		}
	}

	review, err := newReview(a)
	if err != nil {
		return nil, fail("could not create admission objects: %w", err)
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, fail("could not create admission objects: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tgt.url.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fail("%w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fail("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseSize))
	if err != nil {
		return nil, fail("failed to call webhook: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fail("failed to call webhook: the server responded with status %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fail("received invalid webhook response: %w", err)
	}
	verified, err := webhookrequest.VerifyAdmissionResponse(review.Request.UID, mutating, &out)
	if err != nil {
		return nil, fail("received invalid webhook response: %w", err)
	}
	return verified, nil
}

// failedCall is the error of a failed call under failurePolicy Fail: 500,
// "failed calling webhook ...", as kube-apiserver answers.
func failedCall(err error) error {
	return apierrors.NewInternalError(err)
}
