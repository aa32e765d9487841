// Package scheme builds the runtime.Scheme berth serves and decodes with:
// every k8s.io/api group-version berth serves, meta/v1 types, the defaulting
// funcs of berth/internal/api/defaults and the field label conversions of
// berth/internal/api/fieldsets.
package scheme

import (
	"fmt"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"berth/internal/api/convert"
	"berth/internal/api/defaults"
	"berth/internal/api/fieldsets"
)

// GroupVersions lists the API group-versions berth serves, in the order
// discovery should list them (the legacy core group first).
var GroupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	appsv1.SchemeGroupVersion,
	coordinationv1.SchemeGroupVersion,
	eventsv1.SchemeGroupVersion,
	discoveryv1.SchemeGroupVersion,
	storagev1.SchemeGroupVersion,
	nodev1.SchemeGroupVersion,
	rbacv1.SchemeGroupVersion,
	policyv1.SchemeGroupVersion,
	authenticationv1.SchemeGroupVersion,
	authorizationv1.SchemeGroupVersion,
	admissionregistrationv1.SchemeGroupVersion,
	certificatesv1.SchemeGroupVersion,
	networkingv1.SchemeGroupVersion,
	metricsv1beta1.SchemeGroupVersion,
	batchv1.SchemeGroupVersion,
	schedulingv1.SchemeGroupVersion,
	flowcontrolv1.SchemeGroupVersion,
	apiregistrationv1.SchemeGroupVersion,
}

// ScaleGroupVersion is the group-version of the Scale objects the /scale
// subresources speak (registered in New; not a served group of its own).
var ScaleGroupVersion = autoscalingv1.SchemeGroupVersion

// New returns a scheme with every type berth serves registered, meta/v1
// (and meta/v1beta1 for older clients' Table requests) registered,
// unversioned meta types (Status, APIVersions, …) added, defaulting funcs
// installed (scheme.Default(obj) applies them) and field label conversions
// for every supported field selector.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	builders := []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		coordinationv1.AddToScheme,
		eventsv1.AddToScheme,
		discoveryv1.AddToScheme,
		storagev1.AddToScheme,
		nodev1.AddToScheme,
		rbacv1.AddToScheme,
		policyv1.AddToScheme,
		authenticationv1.AddToScheme,
		authorizationv1.AddToScheme,
		autoscalingv1.AddToScheme,
		admissionregistrationv1.AddToScheme,
		certificatesv1.AddToScheme,
		networkingv1.AddToScheme,
		metricsv1beta1.AddToScheme,
		batchv1.AddToScheme,
		schedulingv1.AddToScheme,
		flowcontrolv1.AddToScheme,
		apiextensionsv1.AddToScheme,
		apiregistrationv1.AddToScheme,
		autoscalingv2.AddToScheme,
		metav1.AddMetaToScheme,
		metav1beta1.AddMetaToScheme,
		metav1beta1.RegisterConversions,
		addDefaultingFuncs,
		addFieldLabelConversions,
		addEventConversions,
	}
	for _, add := range builders {
		if err := add(s); err != nil {
			// Registration of static types cannot fail unless the code is wrong.
			panic(fmt.Sprintf("building berth scheme: %v", err))
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return s
}

// Codecs returns the serializer factory for s: JSON, YAML and protobuf.
func Codecs(s *runtime.Scheme) serializer.CodecFactory {
	return serializer.NewCodecFactory(s)
}

// addDefaultingFuncs installs berth's defaulting funcs for every defaulted
// kind and its list kind.
func addDefaultingFuncs(s *runtime.Scheme) error {
	add := func(obj runtime.Object, fn func(interface{})) { s.AddTypeDefaultingFunc(obj, fn) }

	add(&corev1.Pod{}, func(o interface{}) { defaults.Pod(o.(*corev1.Pod)) })
	add(&corev1.PodList{}, func(o interface{}) {
		for i := range o.(*corev1.PodList).Items {
			defaults.Pod(&o.(*corev1.PodList).Items[i])
		}
	})
	add(&corev1.PodTemplate{}, func(o interface{}) { defaults.PodTemplateSpec(&o.(*corev1.PodTemplate).Template) })
	add(&corev1.Service{}, func(o interface{}) { defaults.Service(o.(*corev1.Service)) })
	add(&corev1.ServiceList{}, func(o interface{}) {
		for i := range o.(*corev1.ServiceList).Items {
			defaults.Service(&o.(*corev1.ServiceList).Items[i])
		}
	})
	add(&corev1.Namespace{}, func(o interface{}) { defaults.Namespace(o.(*corev1.Namespace)) })
	add(&corev1.NamespaceList{}, func(o interface{}) {
		for i := range o.(*corev1.NamespaceList).Items {
			defaults.Namespace(&o.(*corev1.NamespaceList).Items[i])
		}
	})
	add(&corev1.Node{}, func(o interface{}) { defaults.Node(o.(*corev1.Node)) })
	add(&corev1.NodeList{}, func(o interface{}) {
		for i := range o.(*corev1.NodeList).Items {
			defaults.Node(&o.(*corev1.NodeList).Items[i])
		}
	})
	add(&corev1.Secret{}, func(o interface{}) { defaults.Secret(o.(*corev1.Secret)) })
	add(&corev1.SecretList{}, func(o interface{}) {
		for i := range o.(*corev1.SecretList).Items {
			defaults.Secret(&o.(*corev1.SecretList).Items[i])
		}
	})
	add(&corev1.ConfigMap{}, func(o interface{}) { defaults.ConfigMap(o.(*corev1.ConfigMap)) })
	add(&corev1.ConfigMapList{}, func(o interface{}) {
		for i := range o.(*corev1.ConfigMapList).Items {
			defaults.ConfigMap(&o.(*corev1.ConfigMapList).Items[i])
		}
	})
	add(&corev1.PersistentVolume{}, func(o interface{}) { defaults.PersistentVolume(o.(*corev1.PersistentVolume)) })
	add(&corev1.PersistentVolumeList{}, func(o interface{}) {
		for i := range o.(*corev1.PersistentVolumeList).Items {
			defaults.PersistentVolume(&o.(*corev1.PersistentVolumeList).Items[i])
		}
	})
	add(&corev1.PersistentVolumeClaim{}, func(o interface{}) { defaults.PersistentVolumeClaim(o.(*corev1.PersistentVolumeClaim)) })
	add(&corev1.PersistentVolumeClaimList{}, func(o interface{}) {
		for i := range o.(*corev1.PersistentVolumeClaimList).Items {
			defaults.PersistentVolumeClaim(&o.(*corev1.PersistentVolumeClaimList).Items[i])
		}
	})
	add(&corev1.Endpoints{}, func(o interface{}) { defaults.Endpoints(o.(*corev1.Endpoints)) })
	add(&appsv1.Deployment{}, func(o interface{}) { defaults.Deployment(o.(*appsv1.Deployment)) })
	add(&appsv1.DeploymentList{}, func(o interface{}) {
		for i := range o.(*appsv1.DeploymentList).Items {
			defaults.Deployment(&o.(*appsv1.DeploymentList).Items[i])
		}
	})
	add(&appsv1.ReplicaSet{}, func(o interface{}) { defaults.ReplicaSet(o.(*appsv1.ReplicaSet)) })
	add(&appsv1.ReplicaSetList{}, func(o interface{}) {
		for i := range o.(*appsv1.ReplicaSetList).Items {
			defaults.ReplicaSet(&o.(*appsv1.ReplicaSetList).Items[i])
		}
	})
	add(&batchv1.Job{}, func(o interface{}) { defaults.Job(o.(*batchv1.Job)) })
	add(&batchv1.JobList{}, func(o interface{}) {
		for i := range o.(*batchv1.JobList).Items {
			defaults.Job(&o.(*batchv1.JobList).Items[i])
		}
	})
	add(&batchv1.CronJob{}, func(o interface{}) { defaults.CronJob(o.(*batchv1.CronJob)) })
	add(&batchv1.CronJobList{}, func(o interface{}) {
		for i := range o.(*batchv1.CronJobList).Items {
			defaults.CronJob(&o.(*batchv1.CronJobList).Items[i])
		}
	})
	add(&storagev1.StorageClass{}, func(o interface{}) { defaults.StorageClass(o.(*storagev1.StorageClass)) })
	add(&storagev1.StorageClassList{}, func(o interface{}) {
		for i := range o.(*storagev1.StorageClassList).Items {
			defaults.StorageClass(&o.(*storagev1.StorageClassList).Items[i])
		}
	})
	add(&storagev1.CSIDriver{}, func(o interface{}) { defaults.CSIDriver(o.(*storagev1.CSIDriver)) })
	add(&storagev1.CSIDriverList{}, func(o interface{}) {
		for i := range o.(*storagev1.CSIDriverList).Items {
			defaults.CSIDriver(&o.(*storagev1.CSIDriverList).Items[i])
		}
	})
	add(&discoveryv1.EndpointSlice{}, func(o interface{}) { defaults.EndpointSlice(o.(*discoveryv1.EndpointSlice)) })
	add(&discoveryv1.EndpointSliceList{}, func(o interface{}) {
		for i := range o.(*discoveryv1.EndpointSliceList).Items {
			defaults.EndpointSlice(&o.(*discoveryv1.EndpointSliceList).Items[i])
		}
	})
	add(&rbacv1.RoleBinding{}, func(o interface{}) { defaults.RoleBinding(o.(*rbacv1.RoleBinding)) })
	add(&rbacv1.RoleBindingList{}, func(o interface{}) {
		for i := range o.(*rbacv1.RoleBindingList).Items {
			defaults.RoleBinding(&o.(*rbacv1.RoleBindingList).Items[i])
		}
	})
	add(&rbacv1.ClusterRoleBinding{}, func(o interface{}) { defaults.ClusterRoleBinding(o.(*rbacv1.ClusterRoleBinding)) })
	add(&rbacv1.ClusterRoleBindingList{}, func(o interface{}) {
		for i := range o.(*rbacv1.ClusterRoleBindingList).Items {
			defaults.ClusterRoleBinding(&o.(*rbacv1.ClusterRoleBindingList).Items[i])
		}
	})
	add(&corev1.LimitRange{}, func(o interface{}) { defaults.LimitRange(o.(*corev1.LimitRange)) })
	add(&corev1.LimitRangeList{}, func(o interface{}) {
		for i := range o.(*corev1.LimitRangeList).Items {
			defaults.LimitRange(&o.(*corev1.LimitRangeList).Items[i])
		}
	})
	add(&admissionregistrationv1.MutatingWebhookConfiguration{}, func(o interface{}) {
		defaults.MutatingWebhookConfiguration(o.(*admissionregistrationv1.MutatingWebhookConfiguration))
	})
	add(&admissionregistrationv1.MutatingWebhookConfigurationList{}, func(o interface{}) {
		for i := range o.(*admissionregistrationv1.MutatingWebhookConfigurationList).Items {
			defaults.MutatingWebhookConfiguration(&o.(*admissionregistrationv1.MutatingWebhookConfigurationList).Items[i])
		}
	})
	add(&admissionregistrationv1.ValidatingWebhookConfiguration{}, func(o interface{}) {
		defaults.ValidatingWebhookConfiguration(o.(*admissionregistrationv1.ValidatingWebhookConfiguration))
	})
	add(&admissionregistrationv1.ValidatingWebhookConfigurationList{}, func(o interface{}) {
		for i := range o.(*admissionregistrationv1.ValidatingWebhookConfigurationList).Items {
			defaults.ValidatingWebhookConfiguration(&o.(*admissionregistrationv1.ValidatingWebhookConfigurationList).Items[i])
		}
	})
	add(&networkingv1.IngressClass{}, func(o interface{}) { defaults.IngressClass(o.(*networkingv1.IngressClass)) })
	add(&networkingv1.IngressClassList{}, func(o interface{}) {
		for i := range o.(*networkingv1.IngressClassList).Items {
			defaults.IngressClass(&o.(*networkingv1.IngressClassList).Items[i])
		}
	})
	add(&corev1.ReplicationController{}, func(o interface{}) { defaults.ReplicationController(o.(*corev1.ReplicationController)) })
	add(&corev1.ReplicationControllerList{}, func(o interface{}) {
		for i := range o.(*corev1.ReplicationControllerList).Items {
			defaults.ReplicationController(&o.(*corev1.ReplicationControllerList).Items[i])
		}
	})
	add(&appsv1.DaemonSet{}, func(o interface{}) { defaults.DaemonSet(o.(*appsv1.DaemonSet)) })
	add(&appsv1.DaemonSetList{}, func(o interface{}) {
		for i := range o.(*appsv1.DaemonSetList).Items {
			defaults.DaemonSet(&o.(*appsv1.DaemonSetList).Items[i])
		}
	})
	add(&schedulingv1.PriorityClass{}, func(o interface{}) { defaults.PriorityClass(o.(*schedulingv1.PriorityClass)) })
	add(&schedulingv1.PriorityClassList{}, func(o interface{}) {
		for i := range o.(*schedulingv1.PriorityClassList).Items {
			defaults.PriorityClass(&o.(*schedulingv1.PriorityClassList).Items[i])
		}
	})
	add(&admissionregistrationv1.ValidatingAdmissionPolicy{}, func(o interface{}) {
		defaults.ValidatingAdmissionPolicy(o.(*admissionregistrationv1.ValidatingAdmissionPolicy))
	})
	add(&admissionregistrationv1.ValidatingAdmissionPolicyList{}, func(o interface{}) {
		for i := range o.(*admissionregistrationv1.ValidatingAdmissionPolicyList).Items {
			defaults.ValidatingAdmissionPolicy(&o.(*admissionregistrationv1.ValidatingAdmissionPolicyList).Items[i])
		}
	})
	add(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, func(o interface{}) {
		defaults.ValidatingAdmissionPolicyBinding(o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding))
	})
	add(&admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}, func(o interface{}) {
		for i := range o.(*admissionregistrationv1.ValidatingAdmissionPolicyBindingList).Items {
			defaults.ValidatingAdmissionPolicyBinding(&o.(*admissionregistrationv1.ValidatingAdmissionPolicyBindingList).Items[i])
		}
	})
	add(&flowcontrolv1.FlowSchema{}, func(o interface{}) { defaults.FlowSchema(o.(*flowcontrolv1.FlowSchema)) })
	add(&flowcontrolv1.FlowSchemaList{}, func(o interface{}) {
		for i := range o.(*flowcontrolv1.FlowSchemaList).Items {
			defaults.FlowSchema(&o.(*flowcontrolv1.FlowSchemaList).Items[i])
		}
	})
	add(&flowcontrolv1.PriorityLevelConfiguration{}, func(o interface{}) {
		defaults.PriorityLevelConfiguration(o.(*flowcontrolv1.PriorityLevelConfiguration))
	})
	add(&flowcontrolv1.PriorityLevelConfigurationList{}, func(o interface{}) {
		for i := range o.(*flowcontrolv1.PriorityLevelConfigurationList).Items {
			defaults.PriorityLevelConfiguration(&o.(*flowcontrolv1.PriorityLevelConfigurationList).Items[i])
		}
	})
	add(&appsv1.StatefulSet{}, func(o interface{}) { defaults.StatefulSet(o.(*appsv1.StatefulSet)) })
	add(&appsv1.StatefulSetList{}, func(o interface{}) {
		for i := range o.(*appsv1.StatefulSetList).Items {
			defaults.StatefulSet(&o.(*appsv1.StatefulSetList).Items[i])
		}
	})
	add(&autoscalingv2.HorizontalPodAutoscaler{}, func(o interface{}) { defaults.HorizontalPodAutoscaler(o.(*autoscalingv2.HorizontalPodAutoscaler)) })
	add(&autoscalingv2.HorizontalPodAutoscalerList{}, func(o interface{}) {
		for i := range o.(*autoscalingv2.HorizontalPodAutoscalerList).Items {
			defaults.HorizontalPodAutoscaler(&o.(*autoscalingv2.HorizontalPodAutoscalerList).Items[i])
		}
	})
	add(&autoscalingv1.HorizontalPodAutoscaler{}, func(o interface{}) {
		if h := o.(*autoscalingv1.HorizontalPodAutoscaler); h.Spec.MinReplicas == nil {
			one := int32(1)
			h.Spec.MinReplicas = &one
		}
	})
	return nil
}

// addFieldLabelConversions accepts, for each kind, exactly the field
// selector labels its field set offers (unsupported labels are rejected
// with the same error kube-apiserver gives).
func addFieldLabelConversions(s *runtime.Scheme) error {
	for _, k := range fieldsets.Kinds() {
		obj, err := s.New(k.GVK)
		if err != nil {
			return err
		}
		labels := k.Labels
		if labels == nil {
			labels = map[string]string{}
			for key := range k.Fields(obj) {
				labels[key] = key
			}
		}
		if err := s.AddFieldLabelConversionFunc(k.GVK, labelConversion(labels)); err != nil {
			return err
		}
	}
	return nil
}

// labelConversion accepts the labels in supported, renaming each to the
// field set key it maps to.
func labelConversion(supported map[string]string) runtime.FieldLabelConversionFunc {
	return func(label, value string) (string, string, error) {
		if key, ok := supported[label]; ok {
			return key, value, nil
		}
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
}

// addEventConversions lets scheme.Convert map between core/v1 and
// events.k8s.io/v1 events (upstream serves one object through both APIs).
// They are different groups, so ConvertToVersion does not use them.
func addEventConversions(s *runtime.Scheme) error {
	if err := s.AddConversionFunc((*eventsv1.Event)(nil), (*corev1.Event)(nil), func(a, b interface{}, _ conversion.Scope) error {
		*b.(*corev1.Event) = *convert.EventToCore(a.(*eventsv1.Event))
		return nil
	}); err != nil {
		return err
	}
	if err := s.AddConversionFunc((*corev1.Event)(nil), (*eventsv1.Event)(nil), func(a, b interface{}, _ conversion.Scope) error {
		*b.(*eventsv1.Event) = *convert.EventFromCore(a.(*corev1.Event))
		return nil
	}); err != nil {
		return err
	}
	// HPAs are stored as autoscaling/v2; the field manager converts to the
	// version a manager wrote (kubectl autoscale: autoscaling/v1).
	if err := s.AddConversionFunc((*autoscalingv2.HorizontalPodAutoscaler)(nil), (*autoscalingv1.HorizontalPodAutoscaler)(nil), func(a, b interface{}, _ conversion.Scope) error {
		*b.(*autoscalingv1.HorizontalPodAutoscaler) = *convert.HPAToV1(a.(*autoscalingv2.HorizontalPodAutoscaler))
		return nil
	}); err != nil {
		return err
	}
	return s.AddConversionFunc((*autoscalingv1.HorizontalPodAutoscaler)(nil), (*autoscalingv2.HorizontalPodAutoscaler)(nil), func(a, b interface{}, _ conversion.Scope) error {
		*b.(*autoscalingv2.HorizontalPodAutoscaler) = *convert.HPAFromV1(a.(*autoscalingv1.HorizontalPodAutoscaler))
		return nil
	})
}
