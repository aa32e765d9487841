package resources

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/apiserver"
	"berth/internal/api/convert"
	"berth/internal/api/defaults"
)

// hpaV1View serves autoscaling/v1 HorizontalPodAutoscalers (and their
// status) from the autoscaling/v2 store, as kube-apiserver serves one set
// of HPAs in both versions; objects are converted on the way in and out
// (convert.HPAToV1, convert.HPAFromV1) and the v2 strategy validates them.
type hpaV1View = versionView[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv1.HorizontalPodAutoscaler]

func newHPAV1View(store *genericregistry.Store, table rest.TableConvertor) *hpaV1View {
	return &hpaV1View{
		store: store, kind: autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler").GroupKind(),
		newObj:  func() *autoscalingv1.HorizontalPodAutoscaler { return &autoscalingv1.HorizontalPodAutoscaler{} },
		newList: func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
		toView:  hpaToV1, fromView: hpaFromV1,
		table: table, tableOnStored: true,
	}
}

var _ rest.StandardStorage = &hpaV1View{}

// serveHPAV1 adds autoscaling/v1 horizontalpodautoscalers (with status)
// as a view of the autoscaling/v2 resource, when that is served.
func serveHPAV1(set *Set) {
	v2, ok := set.ByGVR[autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")]
	if !ok {
		return
	}
	main := newHPAV1View(v2.Store.(*genericregistry.Store), v2.Store.(*genericregistry.Store).TableConvertor)
	res := &apiserver.Resource{
		GroupVersion: autoscalingv1.SchemeGroupVersion, Resource: v2.Resource, Kind: v2.Kind, SingularName: v2.SingularName,
		Namespaced: v2.Namespaced, ShortNames: v2.ShortNames, Categories: v2.Categories, Store: main,
		Subresources: map[string]apiserver.Subresource{},
	}
	if st, ok := v2.Subresources["status"]; ok {
		res.Subresources["status"] = apiserver.Subresource{Kind: res.GroupVersionKind(),
			Storage: newHPAV1View(st.Storage.(*genericregistry.Store), main.table)}
	}
	set.Resources = append(set.Resources, res)
	set.ByGVR[res.GroupVersionResource()] = res
}

// hpaToV1 converts a stored autoscaling/v2 object.
func hpaToV1(obj runtime.Object) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	h, err := storedAs[*autoscalingv2.HorizontalPodAutoscaler](obj)
	if err != nil {
		return nil, err
	}
	return convert.HPAToV1(h), nil
}

// hpaFromV1 converts a client's autoscaling/v1 object for storage, with
// the v2 defaults.
func hpaFromV1(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := convert.HPAFromV1(in)
	defaults.HorizontalPodAutoscaler(out)
	return out
}
