package scheme

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"berth/internal/errdefs"
)

// The decoder DecodePod uses: a package-level scheme is read-only after New.
var (
	podScheme  = New()
	podDecoder = Codecs(podScheme).UniversalDecoder(corev1.SchemeGroupVersion)
)

// DecodePod decodes a static pod manifest (YAML or JSON) into a v1.Pod with
// defaults applied, as the kubelet decodes its manifest files: unknown
// fields are ignored (the kubelet's decoder is not strict), apiVersion and
// kind must say v1 Pod, and the pod must have a name. Errors wrap
// errdefs.ErrInvalidArgument.
func DecodePod(data []byte) (*corev1.Pod, error) {
	jsonData, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("invalid pod manifest: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	obj, gvk, err := podDecoder.Decode(jsonData, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid pod manifest: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("invalid pod manifest: got %s, want v1 Pod: %w", describe(gvk, obj), errdefs.ErrInvalidArgument)
	}
	if pod.Name == "" {
		return nil, fmt.Errorf("invalid pod: name is needed for the pod: %w", errdefs.ErrInvalidArgument)
	}
	return pod, nil
}

// DecodePods decodes a manifest file holding either one v1 Pod or a v1
// PodList, as the kubelet accepts both in its manifest directory; each pod
// is defaulted and must have a name. Errors wrap errdefs.ErrInvalidArgument.
func DecodePods(data []byte) ([]*corev1.Pod, error) {
	jsonData, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("invalid pod manifest: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	obj, gvk, err := podDecoder.Decode(jsonData, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid pod manifest: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	var pods []*corev1.Pod
	switch o := obj.(type) {
	case *corev1.Pod:
		pods = []*corev1.Pod{o}
	case *corev1.PodList:
		for i := range o.Items {
			pods = append(pods, &o.Items[i])
		}
	default:
		return nil, fmt.Errorf("invalid pod manifest: got %s, want v1 Pod or PodList: %w", describe(gvk, obj), errdefs.ErrInvalidArgument)
	}
	for i, pod := range pods {
		if pod.Name == "" {
			return nil, fmt.Errorf("invalid pod (item %d): name is needed for the pod: %w", i, errdefs.ErrInvalidArgument)
		}
	}
	return pods, nil
}

func describe(gvk interface{ String() string }, obj runtime.Object) string {
	if gvk != nil {
		return gvk.String()
	}
	return fmt.Sprintf("%T", obj)
}
