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
)

// defaultWebhookTimeout applies when a webhook sets no timeoutSeconds.
const defaultWebhookTimeout = 10 * time.Second

// ServiceResolver turns a webhook's service reference into a URL.
type ServiceResolver func(namespace, name string, port int32) (*url.URL, error)

// DefaultServiceResolver resolves to https://NAME.NAMESPACE.svc:PORT.
func DefaultServiceResolver(namespace, name string, port int32) (*url.URL, error) {
	return &url.URL{Scheme: "https", Host: name + "." + namespace + ".svc:" + strconv.Itoa(int(port))}, nil
}

// webhookClients caches one HTTP client per CA bundle.
type webhookClients struct {
	mu      sync.Mutex
	clients map[[32]byte]*http.Client
}

func (c *webhookClients) get(caBundle []byte) (*http.Client, error) {
	key := sha256.Sum256(caBundle)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[key]; ok {
		return cl, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, fmt.Errorf("clientConfig.caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16}}
	if c.clients == nil {
		c.clients = map[[32]byte]*http.Client{}
	}
	c.clients[key] = cl
	return cl, nil
}

// webhookURL is the URL a webhook is called at.
func webhookURL(w *webhookSpec, resolve ServiceResolver) (*url.URL, error) {
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
		return u, nil
	case cc.Service != nil:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		u, err := resolve(cc.Service.Namespace, cc.Service.Name, port)
		if err != nil {
			return nil, fmt.Errorf("resolve service %s/%s: %w", cc.Service.Namespace, cc.Service.Name, err)
		}
		if cc.Service.Path != nil {
			u.Path = *cc.Service.Path
		}
		return u, nil
	default:
		return nil, fmt.Errorf("clientConfig needs url or service")
	}
}

// encodeObject renders an object as the webhook sees it, with apiVersion
// and kind set.
func encodeObject(obj runtime.Object, a admission.Attributes) ([]byte, error) {
	if obj == nil {
		return nil, nil
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(a.GetKind())
	return json.Marshal(c)
}

// newReview builds the AdmissionReview v1 request for a.
func newReview(a admission.Attributes) (*admissionv1.AdmissionReview, error) {
	obj, err := encodeObject(a.GetObject(), a)
	if err != nil {
		return nil, fmt.Errorf("encode object: %w", err)
	}
	old, err := encodeObject(a.GetOldObject(), a)
	if err != nil {
		return nil, fmt.Errorf("encode old object: %w", err)
	}
	var opts []byte
	if o := a.GetOperationOptions(); o != nil {
		if opts, err = json.Marshal(o); err != nil {
			return nil, fmt.Errorf("encode options: %w", err)
		}
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

// callWebhook sends the review and returns the webhook's response. Any
// error here is a call failure, subject to the webhook's failurePolicy.
func callWebhook(ctx context.Context, w *webhookSpec, a admission.Attributes, clients *webhookClients, resolve ServiceResolver) (*admissionv1.AdmissionResponse, error) {
	v1OK := false
	for _, v := range w.reviewVersions {
		v1OK = v1OK || v == "v1"
	}
	if !v1OK {
		return nil, fmt.Errorf("webhook does not accept v1 AdmissionReview (admissionReviewVersions %v)", w.reviewVersions)
	}
	u, err := webhookURL(w, resolve)
	if err != nil {
		return nil, err
	}
	client, err := clients.get(w.clientConfig.CABundle)
	if err != nil {
		return nil, err
	}
	timeout := defaultWebhookTimeout
	if w.timeoutSeconds != nil && *w.timeoutSeconds > 0 {
		timeout = time.Duration(*w.timeoutSeconds) * time.Second
	}
	q := u.Query()
	q.Set("timeout", timeout.String())
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	review, err := newReview(a)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 3<<20))
	if err != nil {
		return nil, fmt.Errorf("failed to read webhook response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to call webhook: the server responded with status %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("received invalid webhook response: %w", err)
	}
	if out.Response == nil {
		return nil, fmt.Errorf("webhook response was absent")
	}
	if out.Response.UID != review.Request.UID {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", review.Request.UID, out.Response.UID)
	}
	return out.Response, nil
}

// denied turns a webhook's refusal into the API error upstream returns.
func denied(webhook string, result *metav1.Status) error {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result.DeepCopy()
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	prefix := fmt.Sprintf("admission webhook %q denied the request", webhook)
	switch {
	case st.Message != "":
		st.Message = prefix + ": " + st.Message
	case st.Reason != "":
		st.Message = prefix + ": " + string(st.Reason)
	default:
		st.Message = prefix + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// callFailed is the error for a call that failed under failurePolicy Fail.
func callFailed(webhook string, err error) error {
	return apierrors.NewInternalError(fmt.Errorf("failed calling webhook %q: %w", webhook, err))
}
