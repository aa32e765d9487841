package resources

import (
	"fmt"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The options objects pods/exec, pods/attach and pods/portforward are
// admitted with (operation CONNECT), read from the request's query as
// upstream's parameter conversion reads them.

func execOptions(q url.Values) (runtime.Object, error) {
	return &corev1.PodExecOptions{
		TypeMeta:  typeMeta("PodExecOptions"),
		Stdin:     queryBool(q, "stdin"),
		Stdout:    queryBool(q, "stdout"),
		Stderr:    queryBool(q, "stderr"),
		TTY:       queryBool(q, "tty"),
		Container: q.Get("container"),
		Command:   q["command"],
	}, nil
}

func attachOptions(q url.Values) (runtime.Object, error) {
	return &corev1.PodAttachOptions{
		TypeMeta:  typeMeta("PodAttachOptions"),
		Stdin:     queryBool(q, "stdin"),
		Stdout:    queryBool(q, "stdout"),
		Stderr:    queryBool(q, "stderr"),
		TTY:       queryBool(q, "tty"),
		Container: q.Get("container"),
	}, nil
}

func portForwardOptions(q url.Values) (runtime.Object, error) {
	opts := &corev1.PodPortForwardOptions{TypeMeta: typeMeta("PodPortForwardOptions")}
	for _, p := range q["ports"] {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("ports: %q is not a port number", p)
		}
		opts.Ports = append(opts.Ports, int32(n))
	}
	return opts, nil
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: kind}
}

// queryBool is key's value as upstream's parameter conversion reads a
// boolean.
func queryBool(q url.Values, key string) bool {
	v, out := q[key], false
	_ = runtime.Convert_Slice_string_To_bool(&v, &out, nil) // never fails
	return out
}

// The options objects of the proxy subresources: the path after /proxy.

func podProxyOptions(q url.Values) (runtime.Object, error) {
	return &corev1.PodProxyOptions{TypeMeta: typeMeta("PodProxyOptions"), Path: q.Get("path")}, nil
}

func serviceProxyOptions(q url.Values) (runtime.Object, error) {
	return &corev1.ServiceProxyOptions{TypeMeta: typeMeta("ServiceProxyOptions"), Path: q.Get("path")}, nil
}

func nodeProxyOptions(q url.Values) (runtime.Object, error) {
	return &corev1.NodeProxyOptions{TypeMeta: typeMeta("NodeProxyOptions"), Path: q.Get("path")}, nil
}
