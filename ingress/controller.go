package ingress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/controller"
	"berth/ingress/routes"
)

// tableKey is the work-queue key of a route table rebuild; the other keys
// are Ingresses' namespace/name, whose status is synced.
const tableKey = "routes"

// shutdownTimeout bounds waiting for requests in flight when stopping.
const shutdownTimeout = 5 * time.Second

// Controller is the ingress controller: its listeners are bound by New,
// Run serves them and keeps the route table and the status current.
type Controller struct {
	cfg        Config
	factory    informers.SharedInformerFactory
	secrets    informers.SharedInformerFactory
	classes    networkinglisters.IngressClassLister
	ingresses  networkinglisters.IngressLister
	services   corelisters.ServiceLister
	slices     discoverylisters.EndpointSliceLister
	tlsSecrets corelisters.SecretLister
	queue      *controller.Queue
	table      atomic.Pointer[routes.Table]
	problems   []string // the last table's, to log changes only

	httpLn, httpsLn net.Listener
	defaultCert     *tls.Certificate
}

// New validates cfg, binds the HTTP and HTTPS listeners (an address in
// use fails here, wrapping syscall.EADDRINUSE) and makes the default
// certificate.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cert, err := newDefaultCertificate(time.Now())
	if err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, defaultCert: cert}
	c.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	// Only TLS Secrets: the controller has no use for the others.
	c.secrets = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("type", string(corev1.SecretTypeTLS)).String()
	}))
	ctrl := controller.Config{Client: cfg.Client, Informers: c.factory, Logger: cfg.Logger, Workers: 1}
	if err := ctrl.Validate("ingress", 1); err != nil {
		return nil, err
	}
	c.queue = controller.NewQueue("ingress", &ctrl)
	c.table.Store(routes.Build(routes.Input{}))

	net1 := c.factory.Networking().V1()
	classInf, ingInf := net1.IngressClasses(), net1.Ingresses()
	svcInf, sliceInf := c.factory.Core().V1().Services(), c.factory.Discovery().V1().EndpointSlices()
	secretInf := c.secrets.Core().V1().Secrets()
	c.classes, c.ingresses, c.services, c.slices, c.tlsSecrets = classInf.Lister(), ingInf.Lister(), svcInf.Lister(), sliceInf.Lister(), secretInf.Lister()
	rebuild := func(any) { c.queue.Add(tableKey) }
	for _, inf := range []cache.SharedIndexInformer{classInf.Informer(), svcInf.Informer(), sliceInf.Informer(), secretInf.Informer()} {
		if err := c.queue.Watch(inf, controller.On(controller.AllEvents, rebuild)); err != nil {
			return nil, err
		}
	}
	if err := c.queue.Watch(ingInf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: rebuild, UpdateFunc: c.ingressUpdated, DeleteFunc: rebuild,
	}); err != nil {
		return nil, err
	}

	if c.httpLn, err = net.Listen("tcp", cfg.HTTPAddress); err != nil {
		return nil, fmt.Errorf("ingress: HTTP listener: %w", err)
	}
	if c.httpsLn, err = net.Listen("tcp", cfg.HTTPSAddress); err != nil {
		c.httpLn.Close()
		return nil, fmt.Errorf("ingress: HTTPS listener: %w", err)
	}
	return c, nil
}

// ingressUpdated rebuilds the table when what routes changed (the spec,
// the class annotation), and checks the status when only it changed.
func (c *Controller) ingressUpdated(oldObj, newObj any) {
	o, n := oldObj.(*networkingv1.Ingress), newObj.(*networkingv1.Ingress)
	if !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || o.Annotations[routes.ClassAnnotation] != n.Annotations[routes.ClassAnnotation] {
		c.queue.Add(tableKey)
		return
	}
	if key, ok := controller.KeyFunc(n); ok {
		c.queue.Add(key)
	}
}

// HTTPAddr and HTTPSAddr are the bound listen addresses.
func (c *Controller) HTTPAddr() net.Addr  { return c.httpLn.Addr() }
func (c *Controller) HTTPSAddr() net.Addr { return c.httpsLn.Addr() }

// Table returns the current route table.
func (c *Controller) Table() *routes.Table { return c.table.Load() }

// Run serves until ctx ends, then stops the listeners, letting requests in
// flight finish for a few seconds; it returns the first serving error.
func (c *Controller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	handler := newProxy(c.Table, c.cfg.Logger)
	servers := []*http.Server{
		{Handler: handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute},
		{Handler: handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.certificate}},
	}
	errs := make(chan error, len(servers))
	go func() { errs <- servers[0].Serve(c.httpLn) }()
	go func() { errs <- servers[1].ServeTLS(c.httpsLn, "", "") }()
	c.factory.Start(ctx.Done())
	c.secrets.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	var loopErr error
	go func() {
		defer wg.Done()
		loopErr = c.queue.Run(ctx, c.sync)
	}()
	c.cfg.Logger.Info("ingress controller serving", "http", c.HTTPAddr().String(), "https", c.HTTPSAddr().String(),
		"controller", c.cfg.ControllerName, "statusAddress", c.cfg.StatusAddress)

	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
		err = fmt.Errorf("ingress: serving: %w", err)
	}
	cancel()
	stopCtx, stop := context.WithTimeout(context.Background(), shutdownTimeout)
	defer stop()
	for _, s := range servers {
		if serr := s.Shutdown(stopCtx); serr != nil {
			s.Close()
		}
	}
	wg.Wait()
	c.factory.Shutdown()
	c.secrets.Shutdown()
	return errors.Join(err, loopErr)
}

// certificate picks the certificate for a TLS handshake: the table's for
// the server name, else the default one.
func (c *Controller) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := c.table.Load().Certificate(hello.ServerName); cert != nil {
		return cert, nil
	}
	return c.defaultCert, nil
}

// sync rebuilds the table (tableKey) or syncs one Ingress's status.
func (c *Controller) sync(ctx context.Context, key string) error {
	if key == tableKey {
		return c.rebuild()
	}
	return c.syncStatus(ctx, key)
}

// rebuild builds the table from the informers' caches, swaps it in and
// queues the status sync of every served Ingress.
func (c *Controller) rebuild() error {
	in := routes.Input{Controller: c.cfg.ControllerName}
	var err error
	if in.Classes, err = c.classes.List(labels.Everything()); err != nil {
		return err
	}
	if in.Ingresses, err = c.ingresses.List(labels.Everything()); err != nil {
		return err
	}
	if in.Services, err = c.services.List(labels.Everything()); err != nil {
		return err
	}
	if in.Slices, err = c.slices.List(labels.Everything()); err != nil {
		return err
	}
	if in.Secrets, err = c.tlsSecrets.List(labels.Everything()); err != nil {
		return err
	}
	t := routes.Build(in)
	c.table.Store(t)
	if !slices.Equal(t.Problems(), c.problems) {
		for _, p := range t.Problems() {
			c.cfg.Logger.Warn("ingress not fully served", "problem", p)
		}
		c.problems = t.Problems()
	}
	for _, n := range t.Served() {
		c.queue.Add(n.String())
	}
	return nil
}

// syncStatus sets a served Ingress's status.loadBalancer to the node's
// address.
func (c *Controller) syncStatus(ctx context.Context, key string) error {
	if c.cfg.StatusAddress == "" {
		return nil
	}
	ns, name, _ := strings.Cut(key, "/")
	if !slices.Contains(c.table.Load().Served(), types.NamespacedName{Namespace: ns, Name: name}) {
		return nil
	}
	ing, err := c.ingresses.Ingresses(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	want := c.loadBalancer()
	if apiequality.Semantic.DeepEqual(ing.Status.LoadBalancer, want) {
		return nil
	}
	upd := ing.DeepCopy()
	upd.Status.LoadBalancer = want
	_, err = c.cfg.Client.NetworkingV1().Ingresses(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// loadBalancer is the status the served Ingresses get.
func (c *Controller) loadBalancer() networkingv1.IngressLoadBalancerStatus {
	lb := networkingv1.IngressLoadBalancerIngress{IP: c.cfg.StatusAddress}
	if net.ParseIP(c.cfg.StatusAddress) == nil {
		lb = networkingv1.IngressLoadBalancerIngress{Hostname: c.cfg.StatusAddress}
	}
	return networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{lb}}
}
