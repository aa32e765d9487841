package metrics

import (
	"context"
	"path"
	"strings"
	"time"
	"unicode"

	"google.golang.org/grpc"
)

// RuntimeInterceptor returns a gRPC unary client interceptor for the CRI
// connection (cri.Config.UnaryInterceptors) counting every runtime and
// image service call in kubelet_runtime_operations_total, its failures in
// kubelet_runtime_operations_errors_total and its duration in
// kubelet_runtime_operations_duration_seconds, by operation_type as the
// kubelet names them (run_podsandbox, create_container, pull_image, …).
// A nil *Metrics gives an interceptor that only makes the call.
func (m *Metrics) RuntimeInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if m == nil {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		op := OperationType(method)
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		m.runtimeOps.WithLabelValues(op).Inc()
		m.runtimeOpDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
		if err != nil {
			m.runtimeOpErrors.WithLabelValues(op).Inc()
		}
		return err
	}
}

// OperationType is the kubelet's operation_type for a CRI gRPC method
// ("/runtime.v1.RuntimeService/RunPodSandbox" → "run_podsandbox").
func OperationType(method string) string {
	name := path.Base(method)
	if name == "UpdateContainerResources" {
		return "update_container" // the kubelet's name
	}
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return strings.ReplaceAll(b.String(), "pod_sandbox", "podsandbox")
}
