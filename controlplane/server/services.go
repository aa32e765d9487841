package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// serviceAllocation is the service ranges' allocators on etcd.
type serviceAllocation struct {
	ipRange    *allocator.IPRange
	ips, ports *allocator.Allocator
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
	sa := &serviceAllocation{ipRange: ipRange, closeFns: []func(){closeFn},
		ips:   allocator.New(ipRange, st, allocator.ServiceIPsKey),
		ports: allocator.New(portRange, st, allocator.ServiceNodePortsKey)}
	sa.allocators = &service.Allocators{IPs: sa.ips, Ports: sa.ports, Log: cfg.Logger.With("component", "service-allocator")}
	return sa, nil
}

func (sa *serviceAllocation) close() {
	for _, fn := range sa.closeFns {
		fn()
	}
}

// repairers reconcile both ranges with the stored Services.
func (sa *serviceAllocation) repairers(cfg Config, set *resources.Set) []*allocator.Repairer {
	lister := set.ByGVR[corev1.SchemeGroupVersion.WithResource("services")].Store.(rest.Lister)
	list := func(uses func([]corev1.Service) []allocator.Use) func(context.Context) ([]allocator.Use, error) {
		return func(ctx context.Context) ([]allocator.Use, error) {
			obj, err := lister.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{})
			if err != nil {
				return nil, err
			}
			return uses(obj.(*corev1.ServiceList).Items), nil
		}
	}
	log := cfg.Logger.With("component", "service-repair")
	return []*allocator.Repairer{
		allocator.NewRepairer(sa.ips, list(service.ClusterIPUses), log),
		allocator.NewRepairer(sa.ports, list(service.NodePortUses), log),
	}
}

// repairAtStart repairs both ranges once the services' watch cache is
// ready (as kube-apiserver does before it serves).
func repairAtStart(ctx context.Context, set *resources.Set, reps []*allocator.Repairer) error {
	store := set.ByGVR[corev1.SchemeGroupVersion.WithResource("services")].Store
	if rc, ok := store.(interface{ ReadinessCheck() error }); ok {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return rc.ReadinessCheck() == nil, nil
		})
		if err != nil {
			return fmt.Errorf("server: the services' storage is not ready: %w", err)
		}
	}
	for _, r := range reps {
		if _, err := r.RunOnce(ctx); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	return nil
}

// repairComponent repairs both ranges every interval (in every server:
// each repair is a compare-and-swap), reporting what it finds as Warning
// Events on the Services, as kube-apiserver's repair controllers.
func repairComponent(interval time.Duration, rc *restclient.Config, reps []*allocator.Repairer) (component, error) {
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return component{}, fmt.Errorf("server: service repair client: %w", err)
	}
	return component{name: "service-repair", run: func(ctx context.Context) error {
		broadcaster := record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		defer broadcaster.Shutdown()
		rec := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "service-allocator-repair"})
		done := make(chan struct{}, len(reps))
		for i, r := range reps {
			r.Report = repairEvents(rec, i == 0)
			go func() {
				defer func() { done <- struct{}{} }()
				_ = r.Run(ctx, interval)
			}()
		}
		for range reps {
			<-done
		}
		return nil
	}}, nil
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
