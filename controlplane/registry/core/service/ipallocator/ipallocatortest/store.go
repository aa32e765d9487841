// Package ipallocatortest is an in-memory ipallocator.Store for unit
// tests, answering with the apiserver's errors (AlreadyExists, NotFound).
package ipallocatortest

import (
	"context"
	"sort"
	"sync"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

var ipaddresses = networkingv1.Resource("ipaddresses")

// Store holds IPAddresses and ServiceCIDRs in memory. Safe for concurrent use.
type Store struct {
	mu    sync.Mutex
	ips   map[string]*networkingv1.IPAddress
	cidrs []networkingv1.ServiceCIDR
	// Creates counts CreateIPAddress calls.
	Creates int
}

// New is a store holding cidrs and no IPAddress.
func New(cidrs ...networkingv1.ServiceCIDR) *Store {
	return &Store{ips: map[string]*networkingv1.IPAddress{}, cidrs: cidrs}
}

// SetServiceCIDRs replaces the ServiceCIDRs.
func (s *Store) SetServiceCIDRs(cidrs ...networkingv1.ServiceCIDR) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cidrs = cidrs
}

// Get returns an IPAddress, nil when absent.
func (s *Store) Get(name string) *networkingv1.IPAddress {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ip, ok := s.ips[name]; ok {
		return ip.DeepCopy()
	}
	return nil
}

// Names are the stored IPAddresses' names, sorted.
func (s *Store) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.ips))
	for n := range s.ips {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CreateIPAddress implements ipallocator.Store.
func (s *Store) CreateIPAddress(_ context.Context, ip *networkingv1.IPAddress) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Creates++
	if _, ok := s.ips[ip.Name]; ok {
		return apierrors.NewAlreadyExists(ipaddresses, ip.Name)
	}
	s.ips[ip.Name] = ip.DeepCopy()
	return nil
}

// IPAddressExists implements ipallocator.Store.
func (s *Store) IPAddressExists(_ context.Context, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ips[name]
	return ok, nil
}

// DeleteIPAddress implements ipallocator.Store.
func (s *Store) DeleteIPAddress(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ips[name]; !ok {
		return apierrors.NewNotFound(ipaddresses, name)
	}
	delete(s.ips, name)
	return nil
}

// ListIPAddresses implements ipallocator.Store.
func (s *Store) ListIPAddresses(context.Context) ([]networkingv1.IPAddress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]networkingv1.IPAddress, 0, len(s.ips))
	for _, ip := range s.ips {
		out = append(out, *ip.DeepCopy())
	}
	return out, nil
}

// ListServiceCIDRs implements ipallocator.Store.
func (s *Store) ListServiceCIDRs(context.Context) ([]networkingv1.ServiceCIDR, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]networkingv1.ServiceCIDR, len(s.cidrs))
	for i := range s.cidrs {
		out[i] = *s.cidrs[i].DeepCopy()
	}
	return out, nil
}
