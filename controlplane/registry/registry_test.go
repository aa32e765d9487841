package registry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"reflect"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"berth/internal/api/scheme"
)

// samples returns one valid (undefaulted) object per resource.
func samples() map[schema.GroupResource]runtime.Object {
	ns := metav1.ObjectMeta{Name: "s", Namespace: "default", Labels: map[string]string{"app": "web"}}
	cl := metav1.ObjectMeta{Name: "s", Labels: map[string]string{"app": "web"}}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: podSpec}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	now := metav1.MicroTime{Time: time.Now()}
	port := int32(80)
	holder := "me"
	pvName := "pv1"
	jobTmpl := *tmpl.DeepCopy()
	jobTmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return map[schema.GroupResource]runtime.Object{
		{Resource: "pods"}:                                 &corev1.Pod{ObjectMeta: ns, Spec: podSpec},
		{Resource: "namespaces"}:                           &corev1.Namespace{ObjectMeta: cl},
		{Resource: "nodes"}:                                &corev1.Node{ObjectMeta: cl},
		{Resource: "configmaps"}:                           &corev1.ConfigMap{ObjectMeta: ns, Data: map[string]string{"k": "v"}},
		{Resource: "secrets"}:                              &corev1.Secret{ObjectMeta: ns, Data: map[string][]byte{"k": []byte("v")}},
		{Resource: "serviceaccounts"}:                      &corev1.ServiceAccount{ObjectMeta: ns},
		{Resource: "events"}:                               &corev1.Event{ObjectMeta: ns, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}, Reason: "Started"},
		{Resource: "endpoints"}:                            &corev1.Endpoints{ObjectMeta: ns, Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}},
		{Resource: "services"}:                             &corev1.Service{ObjectMeta: ns, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "web"}}},
		{Resource: "persistentvolumes"}:                    &corev1.PersistentVolume{ObjectMeta: cl, Spec: corev1.PersistentVolumeSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/d"}}}},
		{Resource: "persistentvolumeclaims"}:               &corev1.PersistentVolumeClaim{ObjectMeta: ns, Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		{Group: "apps", Resource: "deployments"}:           &appsv1.Deployment{ObjectMeta: ns, Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}},
		{Group: "apps", Resource: "replicasets"}:           &appsv1.ReplicaSet{ObjectMeta: ns, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}},
		{Group: "coordination.k8s.io", Resource: "leases"}: &coordinationv1.Lease{ObjectMeta: ns, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
		{Group: "events.k8s.io", Resource: "events"}: &eventsv1.Event{ObjectMeta: ns, EventTime: now, ReportingController: "berth.dev/agent", ReportingInstance: "n1", Action: "Start", Reason: "Started", Type: "Normal",
			Regarding: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}},
		{Group: "discovery.k8s.io", Resource: "endpointslices"}: &discoveryv1.EndpointSlice{ObjectMeta: ns, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}, Ports: []discoveryv1.EndpointPort{{Port: &port}}},
		{Group: "storage.k8s.io", Resource: "storageclasses"}:          &storagev1.StorageClass{ObjectMeta: cl, Provisioner: "berth.dev/local"},
		{Group: "storage.k8s.io", Resource: "csidrivers"}:              &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "local.csi.berth.dev", Labels: map[string]string{"app": "web"}}},
		{Group: "storage.k8s.io", Resource: "csinodes"}:                &storagev1.CSINode{ObjectMeta: cl, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "local.csi.berth.dev", NodeID: "n1"}}}},
		{Group: "rbac.authorization.k8s.io", Resource: "roles"}:        &rbacv1.Role{ObjectMeta: ns, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}: &rbacv1.ClusterRole{ObjectMeta: cl, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}},
		{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}: &rbacv1.RoleBinding{ObjectMeta: ns, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}}},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}: &rbacv1.ClusterRoleBinding{ObjectMeta: cl, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "r"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa", Namespace: "default"}}},
		{Resource: "limitranges"}: &corev1.LimitRange{ObjectMeta: ns, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		{Resource: "resourcequotas"}: &corev1.ResourceQuota{ObjectMeta: ns, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}}},
		{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}: &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: cl,
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "inject.berth.dev", ClientConfig: clientConfig(), SideEffects: &sideEffects, AdmissionReviewVersions: []string{"v1"}}}},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}: &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: cl,
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "check.berth.dev", ClientConfig: clientConfig(), SideEffects: &sideEffects, AdmissionReviewVersions: []string{"v1"}}}},
		{Resource: "podtemplates"}: &corev1.PodTemplate{ObjectMeta: ns, Template: tmpl},
		{Group: "node.k8s.io", Resource: "runtimeclasses"}: &nodev1.RuntimeClass{ObjectMeta: cl, Handler: "runc",
			Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}},
		{Group: "storage.k8s.io", Resource: "volumeattachments"}: &storagev1.VolumeAttachment{ObjectMeta: cl, Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "local.csi.berth.dev", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}}},
		{Group: "storage.k8s.io", Resource: "csistoragecapacities"}: &storagev1.CSIStorageCapacity{ObjectMeta: ns, StorageClassName: "local"},
		{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: &certificatesv1.CertificateSigningRequest{ObjectMeta: cl,
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(), SignerName: "kubernetes.io/kube-apiserver-client-kubelet",
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}},
		{Group: "networking.k8s.io", Resource: "ingresses"}: &networkingv1.Ingress{ObjectMeta: ns, Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
		{Group: "networking.k8s.io", Resource: "ingressclasses"}: &networkingv1.IngressClass{ObjectMeta: cl, Spec: networkingv1.IngressClassSpec{Controller: "berth.dev/ingress"}},
		{Resource: "replicationcontrollers"}:                     &corev1.ReplicationController{ObjectMeta: ns, Spec: corev1.ReplicationControllerSpec{Template: &tmpl}},
		{Group: "apps", Resource: "daemonsets"}:                  &appsv1.DaemonSet{ObjectMeta: ns, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}},
		{Group: "apps", Resource: "controllerrevisions"}:         &appsv1.ControllerRevision{ObjectMeta: ns, Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}},
		{Group: "batch", Resource: "jobs"}:                       &batchv1.Job{ObjectMeta: ns, Spec: batchv1.JobSpec{Template: jobTmpl}},
		{Group: "batch", Resource: "cronjobs"}: &batchv1.CronJob{ObjectMeta: ns, Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTmpl}}}},
		{Group: "scheduling.k8s.io", Resource: "priorityclasses"}: &schedulingv1.PriorityClass{ObjectMeta: cl, Value: 100},
		{Group: "policy", Resource: "poddisruptionbudgets"}: &policyv1.PodDisruptionBudget{ObjectMeta: ns, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable, Selector: sel}},
		{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}: &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: cl,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE"},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "true"}}}},
		{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: cl,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "s", ValidationActions: []admissionregistrationv1.ValidationAction{"Deny"}}},
		{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}: &flowcontrolv1.FlowSchema{ObjectMeta: cl,
			Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "s"}}},
		{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}: &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: cl,
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}},
		{Group: "networking.k8s.io", Resource: "servicecidrs"}: &networkingv1.ServiceCIDR{ObjectMeta: cl, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/16"}}},
		{Group: "networking.k8s.io", Resource: "ipaddresses"}: &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.10", Labels: map[string]string{"app": "web"}},
			Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}}},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", Labels: map[string]string{"app": "web"}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}}},
		{Group: "apiregistration.k8s.io", Resource: "apiservices"}: &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.example.com", Labels: cl.Labels},
			Spec: apiregistrationv1.APIServiceSpec{Group: "example.com", Version: "v1", GroupPriorityMinimum: 100, VersionPriority: 10}},
		{Group: "apps", Resource: "statefulsets"}: &appsv1.StatefulSet{ObjectMeta: ns, Spec: appsv1.StatefulSetSpec{Selector: sel, Template: tmpl}},
		{Group: "autoscaling", Resource: "horizontalpodautoscalers"}: &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: ns, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 3}},
	}
}

var minAvailable = intstr.FromInt32(1)

var sideEffects = admissionregistrationv1.SideEffectClassNone

func clientConfig() admissionregistrationv1.WebhookClientConfig {
	u := "https://127.0.0.1:8443/mutate"
	return admissionregistrationv1.WebhookClientConfig{URL: &u}
}

// csrPEM returns a PEM certificate request for system:node:n1.
func csrPEM() []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// TestEveryResourceThroughTheGenericRegistryFlow drives each resource's
// strategies through k8s.io/apiserver's rest.BeforeCreate/BeforeUpdate (the
// path the generic Store takes), and checks its table and field attributes.
func TestEveryResourceThroughTheGenericRegistryFlow(t *testing.T) {
	s := scheme.New()
	resources := Resources(s)
	objs := samples()
	if len(resources) != len(objs) {
		t.Fatalf("%d resources but %d samples", len(resources), len(objs))
	}
	for gr, res := range resources {
		t.Run(gr.String(), func(t *testing.T) {
			obj, ok := objs[gr]
			if !ok {
				t.Fatalf("no sample for %v", gr)
			}
			obj = obj.DeepCopyObject()
			s.Default(obj)
			ctx := genericapirequest.WithNamespace(genericapirequest.NewContext(), "")
			if res.Strategy.NamespaceScoped() {
				ctx = genericapirequest.WithNamespace(ctx, "default")
			}
			rest.FillObjectMetaSystemFields(obj.(metav1.Object))
			if err := rest.BeforeCreate(res.Strategy, ctx, obj); err != nil {
				t.Fatalf("BeforeCreate: %v", err)
			}
			m, _ := meta.Accessor(obj)
			m.SetResourceVersion("1")

			upd := obj.DeepCopyObject()
			um, _ := meta.Accessor(upd)
			um.SetLabels(map[string]string{"app": "web", "changed": "yes"})
			if err := rest.BeforeUpdate(res.Strategy, ctx, upd, obj); err != nil {
				t.Fatalf("BeforeUpdate (labels only): %v", err)
			}

			// A bad name is reported as a 422 naming metadata.name.
			bad := obj.DeepCopyObject()
			bm, _ := meta.Accessor(bad)
			bm.SetName("bad/name")
			bm.SetResourceVersion("")
			err := rest.BeforeCreate(res.Strategy, ctx, bad)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("bad name: want Invalid, got %v", err)
			}
			if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) == 0 || causes[0].Field != "metadata.name" {
				t.Errorf("bad name causes = %+v", causes)
			}

			table, err := res.Table.ConvertToTable(ctx, obj, nil)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
				t.Fatalf("table: %d rows, cells %v for %d columns", len(table.Rows), table.Rows, len(table.ColumnDefinitions))
			}
			if table.Rows[0].Cells[0] != m.GetName() && table.ColumnDefinitions[0].Name == "Name" {
				t.Errorf("NAME cell = %v", table.Rows[0].Cells[0])
			}

			lbls, flds, err := res.AttrFunc(obj)
			if err != nil || lbls["app"] != "web" || flds["metadata.name"] != m.GetName() {
				t.Errorf("AttrFunc = %v %v %v", lbls, flds, err)
			}
			pred := res.PredicateFunc(labels.SelectorFromSet(labels.Set{"app": "web"}), fields.OneTermEqualSelector("metadata.name", m.GetName()))
			if ok, err := pred.Matches(obj); !ok || err != nil {
				t.Errorf("predicate does not match its own object: %v %v", ok, err)
			}

			if res.StatusStrategy != nil {
				checkStatusStrategyKeepsSpec(t, res, ctx, obj)
			}
		})
	}
}

// checkStatusStrategyKeepsSpec changes the spec through the status
// strategy and expects the change dropped.
func checkStatusStrategyKeepsSpec(t *testing.T, res Resource, ctx context.Context, obj runtime.Object) {
	t.Helper()
	upd := obj.DeepCopyObject()
	spec := reflect.ValueOf(upd).Elem().FieldByName("Spec")
	if !spec.IsValid() {
		t.Fatalf("%T has no Spec", upd)
	}
	before := spec.Interface()
	spec.Set(reflect.Zero(spec.Type()))
	if err := rest.BeforeUpdate(res.StatusStrategy, ctx, upd, obj); err != nil {
		t.Fatalf("status BeforeUpdate: %v", err)
	}
	if after := reflect.ValueOf(upd).Elem().FieldByName("Spec").Interface(); !reflect.DeepEqual(after, before) {
		t.Errorf("status update changed the spec")
	}
}

func TestResetFields(t *testing.T) {
	res := Resources(scheme.New())
	for gr, r := range res {
		if r.StatusStrategy == nil {
			continue
		}
		main, ok1 := r.Strategy.(rest.ResetFieldsStrategy)
		status, ok2 := r.StatusStrategy.(rest.ResetFieldsStrategy)
		if !ok1 || !ok2 {
			t.Fatalf("%v: strategies do not report reset fields", gr)
		}
		for _, set := range main.GetResetFields() {
			if !set.Has(fieldpath.MakePathOrDie("status")) {
				t.Errorf("%v: main strategy does not reset status", gr)
			}
		}
		for _, set := range status.GetResetFields() {
			if !set.Has(fieldpath.MakePathOrDie("spec")) {
				t.Errorf("%v: status strategy does not reset spec", gr)
			}
		}
		if len(main.GetResetFields()) != 1 || len(status.GetResetFields()) != 1 {
			t.Errorf("%v: reset fields %v / %v", gr, main.GetResetFields(), status.GetResetFields())
		}
	}
}
