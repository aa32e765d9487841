package volumes

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/internal/errdefs"
)

func TestClientSourceClassifiesAPIErrors(t *testing.T) {
	for _, c := range []struct {
		code   int
		reason metav1.StatusReason
		class  error
	}{
		{http.StatusNotFound, metav1.StatusReasonNotFound, errdefs.ErrNotFound},
		{http.StatusForbidden, metav1.StatusReasonForbidden, errdefs.ErrPermissionDenied},
		{http.StatusUnauthorized, metav1.StatusReasonUnauthorized, errdefs.ErrUnauthenticated},
		{http.StatusGatewayTimeout, metav1.StatusReasonTimeout, errdefs.ErrDeadlineExceeded},
		{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, errdefs.ErrUnavailable},
	} {
		t.Run(string(c.reason), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeStatus(w, c.code, c.reason, "the server says "+string(c.reason), "configmaps", "x")
			}))
			t.Cleanup(srv.Close)
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
			if err != nil {
				t.Fatal(err)
			}
			src, err := NewClientSource(cs)
			if err != nil {
				t.Fatal(err)
			}
			_, err = src.GetConfigMap(ctx, "ns1", "x")
			if !errors.Is(err, c.class) || !strings.Contains(err.Error(), "the server says "+string(c.reason)) {
				t.Errorf("GetConfigMap error %v, want class %v with the server's message", err, c.class)
			}
		})
	}
	if _, err := NewClientSource(nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("NewClientSource(nil) = %v, want ErrInvalidArgument", err)
	}
}
