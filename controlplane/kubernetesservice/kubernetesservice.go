// Package kubernetesservice keeps the `default/kubernetes` Service, its
// Endpoints and its EndpointSlice pointing at the running apiservers, as
// kube-apiserver's kubernetesservice controller and lease endpoint
// reconciler do: every server renews a lease in etcd (key
// /masterleases/IP, an Endpoints object with a TTL) every Interval and
// sets the Endpoints to the IPs of the unexpired leases, so a server that
// stops (or dies) leaves them once its lease expires; one that stops
// cleanly removes itself at once.
package kubernetesservice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/kubernetes"

	"berth/internal/errdefs"
)

// Upstream's names and defaults.
const (
	Namespace   = metav1.NamespaceDefault
	Name        = "kubernetes"
	PortName    = "https"
	ServicePort = 443
	// LeasePrefix is where the apiservers' leases live (under the storage prefix).
	LeasePrefix = "/masterleases/"
	// DefaultInterval and DefaultTTL are kube-apiserver's endpoint
	// reconciler interval and lease TTL.
	DefaultInterval = 10 * time.Second
	DefaultTTL      = 15 * time.Second
)

// Config configures the reconciler.
type Config struct {
	// Client writes the Service, Endpoints and EndpointSlice.
	Client kubernetes.Interface
	// Leases stores core/v1 Endpoints under LeasePrefix (a raw etcd store:
	// the TTL and the reads must reach etcd).
	Leases apistorage.Interface
	// ServiceIP is the Service's cluster IP (the range's first).
	ServiceIP string
	// IP and Port are this server's advertised address and secure port;
	// an invalid IP (none could be found) only keeps the Service.
	IP   netip.Addr
	Port int
	// Interval and TTL: defaults DefaultInterval, DefaultTTL.
	Interval, TTL time.Duration
	Logger        *slog.Logger
}

// Reconciler is the component.
type Reconciler struct{ cfg Config }

// New validates cfg.
func New(cfg Config) (*Reconciler, error) {
	if cfg.Client == nil || cfg.Leases == nil || cfg.ServiceIP == "" || cfg.Port <= 0 {
		return nil, fmt.Errorf("kubernetesservice: Client, Leases, ServiceIP and Port are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.TTL < time.Second {
		return nil, fmt.Errorf("kubernetesservice: TTL %s is below a second: %w", cfg.TTL, errdefs.ErrInvalidArgument)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reconciler{cfg: cfg}, nil
}

// Run reconciles every Interval until ctx ends, then removes this server
// from the endpoints.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("reconciling the kubernetes service", "err", err)
		}
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := r.remove(stopCtx); err != nil {
				r.cfg.Logger.Warn("removing this server from the kubernetes endpoints", "err", err)
			}
			return nil
		case <-t.C:
		}
	}
}

// Sync makes one pass: the Service, this server's lease, the endpoints.
func (r *Reconciler) Sync(ctx context.Context) error {
	if err := r.ensureService(ctx); err != nil {
		return err
	}
	if !r.cfg.IP.IsValid() {
		return nil
	}
	if err := r.renewLease(ctx); err != nil {
		return err
	}
	ips, err := r.leasedIPs(ctx)
	if err != nil {
		return err
	}
	return r.setEndpoints(ctx, ips)
}

func (r *Reconciler) remove(ctx context.Context) error {
	if !r.cfg.IP.IsValid() {
		return nil
	}
	err := r.cfg.Leases.Delete(ctx, LeasePrefix+r.cfg.IP.String(), &corev1.Endpoints{}, nil, apistorage.ValidateAllObjectFunc, nil, apistorage.DeleteOptions{})
	if err != nil && !apistorage.IsNotFound(err) {
		return err
	}
	ips, err := r.leasedIPs(ctx)
	if err != nil {
		return err
	}
	return r.setEndpoints(ctx, slices.DeleteFunc(ips, func(ip string) bool { return ip == r.cfg.IP.String() }))
}

// DesiredService is the kubernetes Service.
func DesiredService(clusterIP string, targetPort int) *corev1.Service {
	single := corev1.IPFamilyPolicySingleStack
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace,
			Labels: map[string]string{"provider": "kubernetes", "component": "apiserver"}},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: PortName, Protocol: corev1.ProtocolTCP, Port: ServicePort,
				TargetPort: intstr.FromInt32(int32(targetPort))}},
			ClusterIP:       clusterIP,
			ClusterIPs:      []string{clusterIP},
			IPFamilyPolicy:  &single,
			SessionAffinity: corev1.ServiceAffinityNone,
			Type:            corev1.ServiceTypeClusterIP,
		},
	}
}

// ensureService creates the Service or, when its ports or type drifted,
// puts them back (the cluster IP cannot change).
func (r *Reconciler) ensureService(ctx context.Context) error {
	want := DesiredService(r.cfg.ServiceIP, r.cfg.Port)
	svcs := r.cfg.Client.CoreV1().Services(Namespace)
	cur, err := svcs.Get(ctx, Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = svcs.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(cur.Spec.Ports, want.Spec.Ports) && cur.Spec.Type == want.Spec.Type {
		return nil
	}
	cur.Spec.Ports, cur.Spec.Type = want.Spec.Ports, want.Spec.Type
	_, err = svcs.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// renewLease writes this server's lease with a fresh TTL.
func (r *Reconciler) renewLease(ctx context.Context) error {
	ttl := uint64(r.cfg.TTL.Seconds())
	ip := r.cfg.IP.String()
	return r.cfg.Leases.GuaranteedUpdate(ctx, LeasePrefix+ip, &corev1.Endpoints{}, true, nil,
		func(in runtime.Object, _ apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
			ep := in.(*corev1.Endpoints)
			ep.Name = ip
			ep.Subsets = []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: ip}}}}
			return ep, &ttl, nil
		}, nil)
}

// leasedIPs are the IPs of the unexpired leases, sorted.
func (r *Reconciler) leasedIPs(ctx context.Context) ([]string, error) {
	list := &corev1.EndpointsList{}
	err := r.cfg.Leases.GetList(ctx, LeasePrefix, apistorage.ListOptions{Recursive: true, Predicate: apistorage.Everything}, list)
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, ep := range list.Items {
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				if !slices.Contains(ips, a.IP) {
					ips = append(ips, a.IP)
				}
			}
		}
	}
	slices.Sort(ips)
	return ips, nil
}

// DesiredEndpoints is the Endpoints object for ips (sorted).
func DesiredEndpoints(ips []string, port int) *corev1.Endpoints {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace,
		Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}}}
	if len(ips) == 0 {
		return ep
	}
	s := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: PortName, Port: int32(port), Protocol: corev1.ProtocolTCP}}}
	for _, ip := range ips {
		s.Addresses = append(s.Addresses, corev1.EndpointAddress{IP: ip})
	}
	ep.Subsets = []corev1.EndpointSubset{s}
	return ep
}

// DesiredSlice is the EndpointSlice for ips (sorted) of the address type
// of the service IP.
func DesiredSlice(ips []string, port int, addressType discoveryv1.AddressType) *discoveryv1.EndpointSlice {
	name, proto, p := PortName, corev1.ProtocolTCP, int32(port)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: map[string]string{discoveryv1.LabelServiceName: Name}},
		AddressType: addressType,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &p}},
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil || (a.Is6() != (addressType == discoveryv1.AddressTypeIPv6)) {
			continue
		}
		ready := true
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	return slice
}

// setEndpoints writes the Endpoints and the EndpointSlice when they differ.
func (r *Reconciler) setEndpoints(ctx context.Context, ips []string) error {
	addrType := discoveryv1.AddressTypeIPv4
	if a, err := netip.ParseAddr(r.cfg.ServiceIP); err == nil && a.Is6() {
		addrType = discoveryv1.AddressTypeIPv6
	}
	wantEp := DesiredEndpoints(ips, r.cfg.Port)
	eps := r.cfg.Client.CoreV1().Endpoints(Namespace)
	cur, err := eps.Get(ctx, Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = eps.Create(ctx, wantEp, metav1.CreateOptions{})
	case err == nil && !(apiequality.Semantic.DeepEqual(cur.Subsets, wantEp.Subsets) && apiequality.Semantic.DeepEqual(cur.Labels, wantEp.Labels)):
		cur.Subsets, cur.Labels = wantEp.Subsets, wantEp.Labels
		_, err = eps.Update(ctx, cur, metav1.UpdateOptions{})
	}
	epErr := err

	want := DesiredSlice(ips, r.cfg.Port, addrType)
	sliceClient := r.cfg.Client.DiscoveryV1().EndpointSlices(Namespace)
	curSlice, err := sliceClient.Get(ctx, Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = sliceClient.Create(ctx, want, metav1.CreateOptions{})
	case err == nil && curSlice.AddressType != want.AddressType:
		if err = sliceClient.Delete(ctx, Name, metav1.DeleteOptions{}); err == nil {
			_, err = sliceClient.Create(ctx, want, metav1.CreateOptions{})
		}
	case err == nil && !(apiequality.Semantic.DeepEqual(curSlice.Endpoints, want.Endpoints) &&
		apiequality.Semantic.DeepEqual(curSlice.Ports, want.Ports) && apiequality.Semantic.DeepEqual(curSlice.Labels, want.Labels)):
		curSlice.Endpoints, curSlice.Ports, curSlice.Labels = want.Endpoints, want.Ports, want.Labels
		_, err = sliceClient.Update(ctx, curSlice, metav1.UpdateOptions{})
	}
	return errors.Join(epErr, err)
}
