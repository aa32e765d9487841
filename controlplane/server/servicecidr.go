package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/resources"
)

// DefaultServiceCIDRName is the ServiceCIDR made from
// --service-cluster-ip-range, as kube-apiserver's.
const DefaultServiceCIDRName = "kubernetes"

// defaultServiceCIDRInterval is how often the default ServiceCIDR is
// checked (kube-apiserver's: its endpoint reconciler interval).
const defaultServiceCIDRInterval = 10 * time.Second

// ipStore is the cluster IP allocator's view of the ipaddresses and
// servicecidrs registry stores (ipallocator.Store); bound once the
// resources are built.
type ipStore struct {
	ips, cidrs rest.StandardStorage
}

func (s *ipStore) bind(set *resources.Set) error {
	ips, ok1 := set.ByGVR[networkingv1.SchemeGroupVersion.WithResource("ipaddresses")]
	cidrs, ok2 := set.ByGVR[networkingv1.SchemeGroupVersion.WithResource("servicecidrs")]
	if !ok1 || !ok2 {
		return fmt.Errorf("server: ipaddresses and servicecidrs must be served for the cluster IP allocator")
	}
	s.ips, s.cidrs = ips.Store, cidrs.Store
	return nil
}

func clusterScoped(ctx context.Context) context.Context {
	return genericapirequest.WithNamespace(ctx, "")
}

func (s *ipStore) CreateIPAddress(ctx context.Context, ip *networkingv1.IPAddress) error {
	_, err := s.ips.Create(clusterScoped(ctx), ip, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	return err
}

func (s *ipStore) IPAddressExists(ctx context.Context, name string) (bool, error) {
	_, err := s.ips.Get(clusterScoped(ctx), name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func (s *ipStore) DeleteIPAddress(ctx context.Context, name string) error {
	_, _, err := s.ips.Delete(clusterScoped(ctx), name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
	return err
}

func (s *ipStore) ListIPAddresses(ctx context.Context) ([]networkingv1.IPAddress, error) {
	obj, err := s.ips.List(clusterScoped(ctx), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*networkingv1.IPAddressList).Items, nil
}

func (s *ipStore) ListServiceCIDRs(ctx context.Context) ([]networkingv1.ServiceCIDR, error) {
	obj, err := s.cidrs.List(clusterScoped(ctx), &metainternalversion.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	return obj.(*networkingv1.ServiceCIDRList).Items, nil
}

// defaultServiceCIDR keeps the ServiceCIDR "kubernetes" made of the
// server's service range, as kube-apiserver's default ServiceCIDR
// controller: created when missing (Ready), its Ready condition set when
// it has none; one whose CIDRs differ from the flag is reported, not
// changed.
type defaultServiceCIDR struct {
	set      *resources.Set
	cidrs    []string
	log      *slog.Logger
	reported bool
}

// sync checks the default ServiceCIDR once.
func (d *defaultServiceCIDR) sync(ctx context.Context) error {
	res := d.set.ByGVR[networkingv1.SchemeGroupVersion.WithResource("servicecidrs")]
	ctx = clusterScoped(ctx)
	ready := metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
		Message: "Kubernetes default Service CIDR is ready", LastTransitionTime: metav1.Now()}
	obj, err := res.Store.Get(ctx, DefaultServiceCIDRName, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceCIDRName},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: d.cidrs}, Status: networkingv1.ServiceCIDRStatus{Conditions: []metav1.Condition{ready}}}
		_, err = res.Store.Create(ctx, sc, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the default ServiceCIDR: %w", err)
		}
		d.log.Info("created the default ServiceCIDR", "cidrs", d.cidrs)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the default ServiceCIDR: %w", err)
	}
	sc := obj.(*networkingv1.ServiceCIDR)
	if sc.DeletionTimestamp != nil {
		return nil // the ServiceCIDR controller handles its deletion
	}
	if !slices.Equal(sc.Spec.CIDRs, d.cidrs) {
		if !d.reported {
			d.log.Warn("the default ServiceCIDR does not match --service-cluster-ip-range; set the flag to match or delete it",
				"serviceCIDR", sc.Spec.CIDRs, "flag", d.cidrs)
			d.reported = true
		}
		return nil
	}
	if cur := meta.FindStatusCondition(sc.Status.Conditions, ready.Type); cur != nil && cur.Status != metav1.ConditionUnknown {
		return nil
	}
	sc = sc.DeepCopy()
	meta.SetStatusCondition(&sc.Status.Conditions, ready)
	status := res.Subresources["status"].Storage.(rest.Updater)
	_, _, err = status.Update(ctx, sc.Name, rest.DefaultUpdatedObjectInfo(sc), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("setting the default ServiceCIDR ready: %w", err)
	}
	return nil
}

// run checks the default ServiceCIDR every interval until ctx ends.
func (d *defaultServiceCIDR) run(ctx context.Context) error {
	t := time.NewTicker(defaultServiceCIDRInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := d.sync(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("default ServiceCIDR", "err", err)
		}
	}
}
