package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"berth/controlplane/kubernetesservice"
	"berth/controlplane/registry/core/service"
	"berth/controlplane/registry/core/service/allocator"
	"berth/controlplane/registry/core/service/ipallocator"
	"berth/controlplane/resources"
	"berth/controlplane/storage"
	"berth/internal/errdefs"
)

// Defaults of the service flags: k3s's service range, upstream's node
// port range and repair interval.
const (
	DefaultServiceClusterIPRange = "10.43.0.0/16"
	DefaultServiceNodePortRange  = allocator.DefaultNodePortRange
	DefaultServiceRepairInterval = 3 * time.Minute // as kube-apiserver's repair controllers
)

// validateServices checks the service ranges, naming the flag.
func validateServices(c *Config) error {
	if c.ServiceClusterIPRange == "" {
		c.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if c.ServiceNodePortRange == "" {
		c.ServiceNodePortRange = DefaultServiceNodePortRange
	}
	if c.ServiceRepairInterval == 0 {
		c.ServiceRepairInterval = DefaultServiceRepairInterval
	}
	if _, err := allocator.ParseIPRange(c.ServiceClusterIPRange); err != nil {
		return fmt.Errorf("server config: --service-cluster-ip-range: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	if _, err := allocator.ParsePortRange(c.ServiceNodePortRange); err != nil {
		return fmt.Errorf("server config: --service-node-port-range: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	if c.ServiceRepairInterval < 0 || c.EndpointReconcilerTTL < 0 {
		return fmt.Errorf("server config: service repair interval and endpoint reconciler TTL must not be negative: %w", errdefs.ErrInvalidArgument)
	}
	return nil
}

// serviceAllocation is the services' allocators: cluster IPs as
// IPAddress objects in the ServiceCIDRs (the default one made of the
// service range), node ports as a bitmap on etcd.
type serviceAllocation struct {
	ipRange    *allocator.IPRange
	ipStore    *ipStore
	ips        *ipallocator.Allocator
	ports      *allocator.Allocator
	allocators *service.Allocators
	closeFns   []func()
}

func newServiceAllocation(cfg Config, f *storage.Factory) (*serviceAllocation, error) {
	ipRange, err := allocator.ParseIPRange(cfg.ServiceClusterIPRange)
	if err != nil {
		return nil, err
	}
	portRange, err := allocator.ParsePortRange(cfg.ServiceNodePortRange)
	if err != nil {
		return nil, err
	}
	newRA := func() runtime.Object { return &corev1.RangeAllocation{} }
	st, closeFn, err := f.Raw(schema.GroupResource{Resource: "rangeallocations"}, "/ranges", newRA, newRA)
	if err != nil {
		return nil, err
	}
	family := corev1.IPv4Protocol
	if ipRange.Prefix().Addr().Is6() {
		family = corev1.IPv6Protocol
	}
	store := &ipStore{}
	sa := &serviceAllocation{ipRange: ipRange, closeFns: []func(){closeFn}, ipStore: store,
		ips:   ipallocator.New(store, family),
		ports: allocator.New(portRange, st, allocator.ServiceNodePortsKey)}
	sa.allocators = &service.Allocators{IPs: sa.ips, Ports: sa.ports, Log: cfg.Logger.With("component", "service-allocator")}
	return sa, nil
}

func (sa *serviceAllocation) close() {
	for _, fn := range sa.closeFns {
		fn()
	}
}

// repairers reconcile the IPAddresses and the node port range with the
// stored Services.
type repairers struct {
	ips   *ipallocator.Repairer
	ports *allocator.Repairer
}

// bind hands the built resources to the cluster IP allocator and returns
// the repairers.
func (sa *serviceAllocation) bind(cfg Config, set *resources.Set) (repairers, error) {
	if err := sa.ipStore.bind(set); err != nil {
		return repairers{}, err
	}
	lister := set.ByGVR[corev1.SchemeGroupVersion.WithResource("services")].Store.(rest.Lister)
	services := func(ctx context.Context) ([]corev1.Service, error) {
		obj, err := lister.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{})
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.ServiceList).Items, nil
	}
	log := cfg.Logger.With("component", "service-repair")
	ips := ipallocator.NewRepairer(sa.ipStore, func(ctx context.Context) ([]ipallocator.Use, error) {
		svcs, err := services(ctx)
		return service.ClusterIPUses(svcs), err
	}, log)
	// An unheld address goes after upstream's grace, or after three
	// repairs when they run more often (as the node ports' leaks).
	ips.Grace = min(ipallocator.OrphanGrace, allocator.LeakRepairs*cfg.ServiceRepairInterval)
	return repairers{
		ips: ips,
		ports: allocator.NewRepairer(sa.ports, func(ctx context.Context) ([]allocator.Use, error) {
			svcs, err := services(ctx)
			return service.NodePortUses(svcs), err
		}, log),
	}, nil
}

// repairAtStart makes sure of the default ServiceCIDR and repairs the
// allocations once the watch caches they list from are ready (as kube-apiserver
// does before it serves); stored Services of a berth that kept cluster IPs
// in a bitmap get their IPAddresses here.
func repairAtStart(ctx context.Context, set *resources.Set, dsc *defaultServiceCIDR, reps repairers) error {
	// The repairs list services, IP addresses and service CIDRs: each
	// store's watch cache must have initialized.
	for _, gvr := range []schema.GroupVersionResource{corev1.SchemeGroupVersion.WithResource("services"),
		networkingv1.SchemeGroupVersion.WithResource("ipaddresses"), networkingv1.SchemeGroupVersion.WithResource("servicecidrs")} {
		res, ok := set.ByGVR[gvr]
		if !ok {
			continue
		}
		rc, ok := res.Store.(interface{ ReadinessCheck() error })
		if !ok {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return rc.ReadinessCheck() == nil, nil
		})
		if err != nil {
			return fmt.Errorf("server: the %s storage is not ready: %w", gvr.Resource, err)
		}
	}
	if err := dsc.sync(ctx); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if _, err := reps.ips.RunOnce(ctx); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if _, err := reps.ports.RunOnce(ctx); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// repairComponent repairs both ranges every interval (in every server:
// each repair is a compare-and-swap), reporting what it finds as Warning
// Events on the Services, as kube-apiserver's repair controllers.
func repairComponent(interval time.Duration, rc *restclient.Config, reps repairers) (component, error) {
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return component{}, fmt.Errorf("server: service repair client: %w", err)
	}
	return component{name: "service-repair", run: func(ctx context.Context) error {
		broadcaster := record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		defer broadcaster.Shutdown()
		rec := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "service-allocator-repair"})
		reps.ips.Report = ipRepairEvents(rec)
		reps.ports.Report = repairEvents(rec, false)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = reps.ips.Run(ctx, interval)
		}()
		_ = reps.ports.Run(ctx, interval)
		<-done
		return nil
	}}, nil
}

// ipRepairEvents turns the IPAddress repair's findings into upstream's
// Events on each Service concerned (a leak concerns none and is only
// logged).
func ipRepairEvents(rec record.EventRecorder) func(allocator.Finding) {
	return func(f allocator.Finding) {
		family := "IPv4"
		if a, err := netip.ParseAddr(f.Item); err == nil && a.Is6() {
			family = "IPv6"
		}
		var reason, msg string
		switch f.Kind {
		case allocator.FindingRepaired:
			reason, msg = "ClusterIPNotAllocated", fmt.Sprintf("Cluster IP [%s]: %s is not allocated; repairing", family, f.Item)
		case ipallocator.FindingWrongReference:
			reason, msg = "ClusterIPNotAllocated", fmt.Sprintf("the ClusterIP [%s]: %s has a wrong reference; repairing", family, f.Item)
		case allocator.FindingDuplicate:
			reason, msg = "ClusterIPAlreadyAllocated", fmt.Sprintf("Cluster IP [%s]:%s was assigned to multiple services; please recreate service", family, f.Item)
		case allocator.FindingOutOfRange:
			reason, msg = "ClusterIPOutOfRange", fmt.Sprintf("Cluster IP [%s]: %s is not within any configured Service CIDR; please recreate service", family, f.Item)
		default:
			return
		}
		for _, key := range f.Services {
			ns, name, _ := strings.Cut(key, "/")
			rec.Event(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, corev1.EventTypeWarning, reason, msg)
		}
	}
}

// repairEvents turns findings into upstream's repair Events on each
// Service concerned (a leak concerns none and is only logged).
func repairEvents(rec record.EventRecorder, ips bool) func(allocator.Finding) {
	return func(f allocator.Finding) {
		var reason, msg string
		switch {
		case ips && f.Kind == allocator.FindingRepaired:
			reason, msg = "ClusterIPNotAllocated", fmt.Sprintf("Cluster IP %s is not allocated; repairing", f.Item)
		case ips && f.Kind == allocator.FindingDuplicate:
			reason, msg = "ClusterIPAlreadyAllocated", fmt.Sprintf("Cluster IP %s was assigned to multiple services; please recreate service", f.Item)
		case ips && f.Kind == allocator.FindingOutOfRange:
			reason, msg = "ClusterIPOutOfRange", fmt.Sprintf("Cluster IP %s is not within the configured Service CIDR; please recreate service", f.Item)
		case f.Kind == allocator.FindingRepaired:
			reason, msg = "PortNotAllocated", fmt.Sprintf("Port %s is not allocated; repairing", f.Item)
		case f.Kind == allocator.FindingDuplicate:
			reason, msg = "PortAlreadyAllocated", fmt.Sprintf("Port %s was assigned to multiple services; please recreate service", f.Item)
		case f.Kind == allocator.FindingOutOfRange:
			reason, msg = "PortOutOfRange", fmt.Sprintf("Port %s is not within the port range; please recreate service", f.Item)
		default:
			return
		}
		for _, key := range f.Services {
			ns, name, _ := strings.Cut(key, "/")
			rec.Event(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, corev1.EventTypeWarning, reason, msg)
		}
	}
}

// kubernetesServiceComponent keeps default/kubernetes pointing at this
// server (and the others on the same etcd).
func kubernetesServiceComponent(cfg Config, f *storage.Factory, sa *serviceAllocation, rc *restclient.Config, port int) (component, error) {
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return component{}, fmt.Errorf("server: kubernetes service client: %w", err)
	}
	newEp := func() runtime.Object { return &corev1.Endpoints{} }
	leases, closeFn, err := f.Raw(schema.GroupResource{Resource: "endpoints"}, "/masterleases", newEp,
		func() runtime.Object { return &corev1.EndpointsList{} })
	if err != nil {
		return component{}, err
	}
	sa.closeFns = append(sa.closeFns, closeFn)
	ip, err := publicIP(cfg)
	if err != nil {
		cfg.Logger.Warn("no address to publish in the kubernetes endpoints; pods will not reach the apiserver through the kubernetes service", "err", err)
	}
	r, err := kubernetesservice.New(kubernetesservice.Config{
		Client: client, Leases: leases, ServiceIP: sa.ipRange.First().String(), IP: ip, Port: port,
		TTL: cfg.EndpointReconcilerTTL, Logger: cfg.Logger.With("component", "kubernetes-service"),
	})
	if err != nil {
		return component{}, err
	}
	return component{name: "kubernetes-service", run: r.Run}, nil
}

// publicIP is the address this server publishes in the kubernetes
// endpoints, as kube-apiserver picks it: --advertise-address when it is an
// IP, else the listen address unless it is a loopback or unspecified one,
// else the address of the host's default-route interface.
func publicIP(cfg Config) (netip.Addr, error) {
	if a, err := netip.ParseAddr(cfg.AdvertiseAddress); err == nil {
		return a.Unmap(), nil
	}
	host, _, _ := net.SplitHostPort(cfg.Listen)
	bind := net.ParseIP(host)
	if bind == nil {
		bind = net.IPv4zero
	}
	ip, err := utilnet.ResolveBindAddress(bind)
	if err != nil {
		return netip.Addr{}, err
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok || a.Unmap().IsLoopback() {
		return netip.Addr{}, fmt.Errorf("no non-loopback address found (got %v)", ip)
	}
	return a.Unmap(), nil
}

// serviceCertHosts are the serving certificate's names for in-cluster
// clients, as kube-apiserver's: the kubernetes Service's IP and full name,
// and the address published in its endpoints.
func serviceCertHosts(cfg Config) []string {
	hosts := []string{"kubernetes.default.svc.cluster.local"}
	if r, err := allocator.ParseIPRange(cfg.ServiceClusterIPRange); err == nil {
		hosts = append(hosts, r.First().String())
	}
	if ip, err := publicIP(cfg); err == nil {
		hosts = append(hosts, ip.String())
	}
	return hosts
}
