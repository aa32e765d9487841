package registry

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"berth/internal/api/scheme"
)

// TestTableCells checks the cells upstream's printers would show for one
// object of each resource whose table is not covered by its own package's
// tests (AGE columns are left out: they depend on the clock).
func TestTableCells(t *testing.T) {
	created := metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	meta := metav1.ObjectMeta{Name: "x", Namespace: "default", CreationTimestamp: created}
	holder := "node-1"
	port80, port443 := int32(80), int32(443)
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany}
	fs := corev1.PersistentVolumeFilesystem
	class := "local"
	retain := corev1.PersistentVolumeReclaimRetain
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	yes, no := true, false
	for _, tc := range []struct {
		gr    schema.GroupResource
		obj   runtime.Object
		cells map[int]interface{}
	}{
		{schema.GroupResource{Resource: "configmaps"}, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": nil}},
			map[int]interface{}{0: "x", 1: int64(3)}},
		{schema.GroupResource{Resource: "secrets"}, &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
			map[int]interface{}{0: "x", 1: "kubernetes.io/tls", 2: int64(2)}},
		{schema.GroupResource{Resource: "serviceaccounts"}, &corev1.ServiceAccount{ObjectMeta: meta, Secrets: []corev1.ObjectReference{{Name: "t"}}},
			map[int]interface{}{0: "x", 1: int64(1)}},
		{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, &coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
			map[int]interface{}{0: "x", 1: "node-1"}},
		{schema.GroupResource{Resource: "persistentvolumes"}, &corev1.PersistentVolume{ObjectMeta: meta, Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}, AccessModes: rwo, PersistentVolumeReclaimPolicy: retain,
			ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"}, StorageClassName: "local", VolumeMode: &fs}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
			map[int]interface{}{0: "x", 1: "5Gi", 2: "RWO,RWX", 3: "Retain", 4: "Bound", 5: "default/data", 6: "local", 7: "<unset>", 8: "", 10: "Filesystem"}},
		{schema.GroupResource{Resource: "persistentvolumeclaims"}, &corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1", StorageClassName: &class},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: rwo[:1], Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			map[int]interface{}{0: "x", 1: "Bound", 2: "pv1", 3: "1Gi", 4: "RWO", 5: "local", 6: "<unset>", 8: "<unset>"}},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "berth.dev/local", ReclaimPolicy: &retain, VolumeBindingMode: &wffc, AllowVolumeExpansion: &yes},
			map[int]interface{}{0: "local (default)", 1: "berth.dev/local", 2: "Retain", 3: "WaitForFirstConsumer", 4: "true"}},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "csidrivers"}, &storagev1.CSIDriver{ObjectMeta: meta, Spec: storagev1.CSIDriverSpec{AttachRequired: &no, PodInfoOnMount: &yes,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}},
			map[int]interface{}{0: "x", 1: "false", 2: "true", 3: "<unset>", 4: "<unset>", 5: "<unset>", 6: "Persistent,Ephemeral"}},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}, &storagev1.CSINode{ObjectMeta: meta, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "a"}, {Name: "b"}}}},
			map[int]interface{}{0: "x", 1: int64(2)}},
		{schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4,
			Ports:     []discoveryv1.EndpointPort{{Port: &port80}, {Port: &port443}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1", "10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}}, {Addresses: []string{"10.0.0.4", "10.0.0.5"}}}},
			map[int]interface{}{0: "x", 1: "IPv4", 2: "80,443", 3: "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more..."}},
		{schema.GroupResource{Resource: "endpoints"}, &corev1.Endpoints{ObjectMeta: meta, Subsets: []corev1.EndpointSubset{
			{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "fd00::1"}}, Ports: []corev1.EndpointPort{{Port: 80}, {Port: 443}}}}},
			map[int]interface{}{0: "x", 1: "10.0.0.1:80,10.0.0.1:443,[fd00::1]:80 + 1 more..."}},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, &rbacv1.Role{ObjectMeta: meta},
			map[int]interface{}{0: "x", 1: "2026-01-01T00:00:00Z"}},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Name: "sa", Namespace: "kube-system"}}},
			map[int]interface{}{0: "x", 1: "ClusterRole/admin", 3: "alice", 4: "devs", 5: "kube-system/sa"}},
		{schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, &eventsv1.Event{ObjectMeta: meta, Regarding: corev1.ObjectReference{Kind: "Pod", Name: "web"}, Reason: "Pulled",
			Note: "pulled", Type: "Normal", ReportingController: "berth.dev/agent", ReportingInstance: "n1", EventTime: metav1.MicroTime{Time: created.Time}},
			map[int]interface{}{1: "Normal", 2: "Pulled", 3: "pod/web", 5: "berth.dev/agent, n1", 6: "pulled", 8: int64(1), 9: "x"}},
		{schema.GroupResource{Resource: "podtemplates"}, &corev1.PodTemplate{ObjectMeta: meta, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "fe"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "busybox:1"}, {Name: "b", Image: "nginx:1"}}}}},
			map[int]interface{}{0: "x", 1: "a,b", 2: "busybox:1,nginx:1", 3: "app=web,tier=fe"}},
		{schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}, &nodev1.RuntimeClass{ObjectMeta: meta, Handler: "runc"},
			map[int]interface{}{0: "x", 1: "runc"}},
		{schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, &schedulingv1.PriorityClass{ObjectMeta: meta, Value: 1000, GlobalDefault: true,
			PreemptionPolicy: ptr.To(corev1.PreemptNever)},
			map[int]interface{}{0: "x", 1: int64(1000), 2: true, 4: "Never"}},
		{schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, &policyv1.PodDisruptionBudget{ObjectMeta: meta,
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("20%"))}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 2}},
			map[int]interface{}{0: "x", 1: "N/A", 2: "20%", 3: int64(2)}},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}, &storagev1.VolumeAttachment{ObjectMeta: meta, Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.com", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &class}}, Status: storagev1.VolumeAttachmentStatus{Attached: true}},
			map[int]interface{}{0: "x", 1: "csi.example.com", 2: "local", 3: "n1", 4: true}},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "csistoragecapacities"}, &storagev1.CSIStorageCapacity{ObjectMeta: meta, StorageClassName: "local"},
			map[int]interface{}{0: "x", 1: "local", 2: "<unset>"}},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, &networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{
			IngressClassName: &class, TLS: []networkingv1.IngressTLS{{SecretName: "tls"}},
			Rules: []networkingv1.IngressRule{{Host: "a.example"}, {}, {Host: "b.example"}, {Host: "c.example"}, {Host: "d.example"}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
				{IP: "10.0.0.2"}, {Hostname: "lb.example"}, {IP: "10.0.0.1"}, {IP: "10.0.0.2"}}}}},
			map[int]interface{}{0: "x", 1: "local", 2: "a.example,b.example,c.example + 2 more...", 3: "10.0.0.1,10.0.0.2,lb.example", 4: "80, 443"}},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, &networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{}, {}, {}, {}}}},
			map[int]interface{}{0: "x", 1: "<none>", 2: "*", 3: "", 4: "80"}},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingressclasses"}, &networkingv1.IngressClass{ObjectMeta: meta, Spec: networkingv1.IngressClassSpec{
			Controller: "berth.dev/ingress", Parameters: &networkingv1.IngressClassParametersReference{APIGroup: &class, Kind: "Config", Name: "p"}}},
			map[int]interface{}{0: "x", 1: "berth.dev/ingress", 2: "Config.local/p"}},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingressclasses"}, &networkingv1.IngressClass{ObjectMeta: meta, Spec: networkingv1.IngressClassSpec{
			Controller: "berth.dev/ingress"}},
			map[int]interface{}{0: "x", 1: "berth.dev/ingress", 2: "<none>"}},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}, &networkingv1.ServiceCIDR{ObjectMeta: meta,
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/16", "fd00::/108"}}},
			map[int]interface{}{0: "x", 1: "10.96.0.0/16,fd00::/108"}},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}, &networkingv1.IPAddress{ObjectMeta: meta,
			Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}}},
			map[int]interface{}{0: "x", 1: "services/default/web"}},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}, &networkingv1.IPAddress{ObjectMeta: meta,
			Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Group: "gateway.networking.k8s.io", Resource: "Gateways", Name: "gw"}}},
			map[int]interface{}{0: "x", 1: "gateways.gateway.networking.k8s.io/gw"}},
	} {
		t.Run(tc.gr.String(), func(t *testing.T) {
			res := Resources(scheme.New())[tc.gr]
			out, err := res.Table.ConvertToTable(context.Background(), tc.obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			row := out.Rows[0].Cells
			if len(row) != len(out.ColumnDefinitions) {
				t.Fatalf("%d cells for %d columns", len(row), len(out.ColumnDefinitions))
			}
			for i, want := range tc.cells {
				if row[i] != want {
					t.Errorf("%s = %#v, want %#v", out.ColumnDefinitions[i].Name, row[i], want)
				}
			}
		})
	}
}
