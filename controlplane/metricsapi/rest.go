package metricsapi

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// Objects gives the nodes and pods the metrics describe (their names and
// labels); the apiserver's stores through rest.Lister.
type Objects struct {
	// Nodes lists the nodes matching selector.
	Nodes func(ctx context.Context, selector labels.Selector) ([]corev1.Node, error)
	// Pods lists the pods in namespace ("" for all) matching selector.
	Pods func(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error)
}

var (
	nodeMetricsResource = metricsv1beta1.SchemeGroupVersion.WithResource("nodes").GroupResource()
	podMetricsResource  = metricsv1beta1.SchemeGroupVersion.WithResource("pods").GroupResource()
)

// NodeMetricsREST serves metrics.k8s.io/v1beta1 nodes: get and list only
// (apiserver.Resource.Verbs), so the embedded rest.StandardStorage stays
// nil and is never called.
type NodeMetricsREST struct {
	rest.StandardStorage
	scraper *Scraper
	objects Objects
}

// PodMetricsREST serves metrics.k8s.io/v1beta1 pods: get and list only.
type PodMetricsREST struct {
	rest.StandardStorage
	scraper *Scraper
	objects Objects
}

var (
	_ rest.StandardStorage = &NodeMetricsREST{}
	_ rest.StandardStorage = &PodMetricsREST{}
)

// NewREST returns the stores of the nodes and pods metrics resources.
func NewREST(s *Scraper, objects Objects) (*NodeMetricsREST, *PodMetricsREST) {
	return &NodeMetricsREST{scraper: s, objects: objects}, &PodMetricsREST{scraper: s, objects: objects}
}

func (*NodeMetricsREST) Destroy()                {}
func (*PodMetricsREST) Destroy()                 {}
func (*NodeMetricsREST) New() runtime.Object     { return &metricsv1beta1.NodeMetrics{} }
func (*NodeMetricsREST) NewList() runtime.Object { return &metricsv1beta1.NodeMetricsList{} }
func (*NodeMetricsREST) NamespaceScoped() bool   { return false }
func (*PodMetricsREST) New() runtime.Object      { return &metricsv1beta1.PodMetrics{} }
func (*PodMetricsREST) NewList() runtime.Object  { return &metricsv1beta1.PodMetricsList{} }
func (*PodMetricsREST) NamespaceScoped() bool    { return true }

// selectorOf is the list's label selector (everything when none).
func selectorOf(opts *metainternalversion.ListOptions) labels.Selector {
	if opts == nil || opts.LabelSelector == nil {
		return labels.Everything()
	}
	return opts.LabelSelector
}

// Get returns a node's metrics; NotFound when the node or its metrics are
// missing, as metrics-server.
func (r *NodeMetricsREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	nodes, err := r.objects.Nodes(ctx, labels.Everything())
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		if nodes[i].Name == name {
			if m, ok := r.metrics(&nodes[i]); ok {
				return m, nil
			}
			break
		}
	}
	return nil, apierrors.NewNotFound(nodeMetricsResource, name)
}

// List returns the metrics of the nodes matching the label selector that
// have them.
func (r *NodeMetricsREST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	nodes, err := r.objects.Nodes(ctx, selectorOf(opts))
	if err != nil {
		return nil, err
	}
	out := &metricsv1beta1.NodeMetricsList{}
	for i := range nodes {
		if m, ok := r.metrics(&nodes[i]); ok {
			out.Items = append(out.Items, *m)
		}
	}
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].Name < out.Items[j].Name })
	return out, nil
}

func (r *NodeMetricsREST) metrics(node *corev1.Node) (*metricsv1beta1.NodeMetrics, bool) {
	u, ok := r.scraper.store.nodeUsage(node.Name)
	if !ok {
		return nil, false
	}
	return &metricsv1beta1.NodeMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels, CreationTimestamp: metav1.NewTime(time.Now())},
		Timestamp:  metav1.NewTime(u.Timestamp), Window: metav1.Duration{Duration: u.Window},
		Usage: resourceList(u),
	}, true
}

// Get returns a pod's metrics.
func (r *PodMetricsREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	pods, err := r.objects.Pods(ctx, ns, labels.Everything())
	if err != nil {
		return nil, err
	}
	usage := r.scraper.store.podUsage()
	for i := range pods {
		if pods[i].Name == name {
			if m, ok := podMetrics(&pods[i], usage); ok {
				return m, nil
			}
			break
		}
	}
	return nil, apierrors.NewNotFound(podMetricsResource, name)
}

// List returns the metrics of the pods in the request's namespace (every
// namespace when none) matching the label selector that have them.
func (r *PodMetricsREST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	pods, err := r.objects.Pods(ctx, ns, selectorOf(opts))
	if err != nil {
		return nil, err
	}
	usage := r.scraper.store.podUsage()
	out := &metricsv1beta1.PodMetricsList{}
	for i := range pods {
		if m, ok := podMetrics(&pods[i], usage); ok {
			out.Items = append(out.Items, *m)
		}
	}
	sort.Slice(out.Items, func(i, j int) bool {
		a, b := out.Items[i], out.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out, nil
}

// podMetrics is a pod's metrics from its containers' usage, with the
// latest timestamp and the shortest window among them.
func podMetrics(pod *corev1.Pod, usage map[podKey][]ContainerUsage) (*metricsv1beta1.PodMetrics, bool) {
	cs := usage[podKey{pod.Namespace, pod.Name}]
	if len(cs) == 0 {
		return nil, false
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	m := &metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels, CreationTimestamp: metav1.NewTime(time.Now())},
	}
	for _, c := range cs {
		if c.Timestamp.After(m.Timestamp.Time) {
			m.Timestamp = metav1.NewTime(c.Timestamp)
		}
		if m.Window.Duration == 0 || c.Window < m.Window.Duration {
			m.Window = metav1.Duration{Duration: c.Window}
		}
		m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: resourceList(c.Usage)})
	}
	return m, true
}

// resourceList is a usage as metrics-server reports it: CPU in nanocores,
// memory in bytes.
func resourceList(u Usage) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewScaledQuantity(u.NanoCores, -9),
		corev1.ResourceMemory: *resource.NewQuantity(u.MemoryBytes, resource.BinarySI),
	}
}

var metricsColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the resource"},
	{Name: "CPU", Type: "string", Description: "CPU usage"},
	{Name: "Memory", Type: "string", Description: "Memory usage"},
	{Name: "Window", Type: "string", Description: "Interval over which the usage is measured"},
}

// ConvertToTable renders node metrics as metrics-server does.
func (r *NodeMetricsREST) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: metricsColumns}
	add := func(m *metricsv1beta1.NodeMetrics) {
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells:  []any{m.Name, m.Usage.Cpu().String(), m.Usage.Memory().String(), m.Window.Duration.String()},
			Object: runtime.RawExtension{Object: m},
		})
	}
	switch o := obj.(type) {
	case *metricsv1beta1.NodeMetrics:
		add(o)
	case *metricsv1beta1.NodeMetricsList:
		for i := range o.Items {
			add(&o.Items[i])
		}
	}
	return t, nil
}

// ConvertToTable renders pod metrics as metrics-server does: the sums of
// the containers' usage.
func (r *PodMetricsREST) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: metricsColumns}
	add := func(m *metricsv1beta1.PodMetrics) {
		cpu, mem := resource.Quantity{}, resource.Quantity{}
		for _, c := range m.Containers {
			cpu.Add(*c.Usage.Cpu())
			mem.Add(*c.Usage.Memory())
		}
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells:  []any{m.Name, cpu.String(), mem.String(), m.Window.Duration.String()},
			Object: runtime.RawExtension{Object: m},
		})
	}
	switch o := obj.(type) {
	case *metricsv1beta1.PodMetrics:
		add(o)
	case *metricsv1beta1.PodMetricsList:
		for i := range o.Items {
			add(&o.Items[i])
		}
	}
	return t, nil
}
