package clusterdns

import (
	"net/netip"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// store is what the records are answered from: a read-only view of the
// Services and EndpointSlices.
type store interface {
	// service returns ns/name, nil if there is none.
	service(ns, name string) *v1.Service
	// namespace tells whether namespace ns exists.
	namespace(ns string) bool
	// slices returns the EndpointSlices of Service ns/name.
	slices(ns, name string) []*discoveryv1.EndpointSlice
	// servicesByIP returns the Services with cluster IP ip.
	servicesByIP(ip netip.Addr) []*v1.Service
	// slicesByAddress returns the EndpointSlices with an endpoint at ip.
	slicesByAddress(ip netip.Addr) []*discoveryv1.EndpointSlice
}

const (
	byServiceName = "serviceName" // ns/name of a slice's Service
	byClusterIP   = "clusterIP"
	byAddress     = "address"
)

// informerStore is the store over informers' indexers.
type informerStore struct {
	nss, svcs, eps cache.Indexer
}

// indexers to add to the Service and EndpointSlice informers (which have
// cache.NamespaceIndex already).
var (
	serviceIndexers = cache.Indexers{
		byClusterIP: func(obj any) ([]string, error) {
			svc, ok := obj.(*v1.Service)
			if !ok {
				return nil, nil
			}
			var ips []string
			for _, s := range svc.Spec.ClusterIPs {
				if a, err := netip.ParseAddr(s); err == nil {
					ips = append(ips, a.String())
				}
			}
			return ips, nil
		},
	}
	sliceIndexers = cache.Indexers{
		byServiceName: func(obj any) ([]string, error) {
			s, ok := obj.(*discoveryv1.EndpointSlice)
			if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
				return nil, nil
			}
			return []string{s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]}, nil
		},
		byAddress: func(obj any) ([]string, error) {
			s, ok := obj.(*discoveryv1.EndpointSlice)
			if !ok {
				return nil, nil
			}
			var ips []string
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					if ip, err := netip.ParseAddr(a); err == nil {
						ips = append(ips, ip.String())
					}
				}
			}
			return ips, nil
		},
	}
)

func (s informerStore) service(ns, name string) *v1.Service {
	obj, ok, err := s.svcs.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	svc, _ := obj.(*v1.Service)
	return svc
}

func (s informerStore) namespace(ns string) bool {
	_, ok, err := s.nss.GetByKey(ns)
	return err == nil && ok
}

func (s informerStore) slices(ns, name string) []*discoveryv1.EndpointSlice {
	return indexed[*discoveryv1.EndpointSlice](s.eps, byServiceName, ns+"/"+name)
}

func (s informerStore) servicesByIP(ip netip.Addr) []*v1.Service {
	return indexed[*v1.Service](s.svcs, byClusterIP, ip.String())
}

func (s informerStore) slicesByAddress(ip netip.Addr) []*discoveryv1.EndpointSlice {
	return indexed[*discoveryv1.EndpointSlice](s.eps, byAddress, ip.String())
}

func indexed[T any](idx cache.Indexer, index, key string) []T {
	objs, err := idx.ByIndex(index, key)
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
