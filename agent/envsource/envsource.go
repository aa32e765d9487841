// Package envsource resolves what a container's environment reads from the
// API, as the kubelet's makeEnvironmentVariables and getServiceEnvVarMap do:
// the ConfigMaps and Secrets of env[].valueFrom (configMapKeyRef,
// secretKeyRef) and envFrom (configMapRef, secretRef, with their prefix),
// and the service link variables (FOO_SERVICE_HOST, FOO_PORT_80_TCP, …) of
// the Services in the pod's namespace plus default/kubernetes. It fills the
// Options agent/containerconfig assembles the environment from.
//
// As the 1.34 kubelet (relaxed environment variable validation), envFrom
// keys are used whatever their characters, none skipped.
//
// Errors carry the kubelet's wording (`configmap "x" not found`, `couldn't
// find key y in ConfigMap ns/x`), which becomes the container's
// CreateContainerConfigError message; the caller retries.
package envsource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth/agent/containerconfig"
	"berth/agent/source"
	"berth/internal/errdefs"
)

// Objects reads ConfigMaps and Secrets (agent/volumes.ClientSource); errors
// are classified with errdefs.
type Objects interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Services lists the Services the agent knows (an informer's cache).
type Services interface {
	// List returns every Service, of every namespace.
	List() ([]*v1.Service, error)
	// HasSynced reports that the first list arrived.
	HasSynced() bool
}

// Config configures a Resolver. Both fields are optional: a standalone
// agent has neither, and then a reference to a ConfigMap or Secret fails as
// the kubelet's without a client, and no service variables are set.
type Config struct {
	Objects  Objects
	Services Services
}

// Resolver resolves containers' API-sourced environment.
type Resolver struct {
	cfg Config
}

// New returns a resolver.
func New(cfg Config) *Resolver { return &Resolver{cfg: cfg} }

// masterService is the Service of the default namespace whose variables
// every pod gets, service links enabled or not.
const masterService = "kubernetes"

// Fill resolves container c of pod into opts.EnvFrom, opts.EnvValues and
// opts.ServiceEnv. Objects are read once per call.
func (r *Resolver) Fill(ctx context.Context, pod *v1.Pod, c *v1.Container, opts *containerconfig.Options) error {
	// A static pod does not wait for the Services.
	if r.cfg.Services != nil && !source.IsStatic(pod) && !r.cfg.Services.HasSynced() {
		return fmt.Errorf("services have not yet been read at least once, cannot construct envvars")
	}
	svcEnv, err := r.serviceEnv(pod)
	if err != nil {
		return err
	}
	o := objects{r: r, ctx: ctx, ns: pod.Namespace, cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	var from []containerconfig.EnvVar
	for _, ef := range c.EnvFrom {
		var data map[string]string
		switch {
		case ef.ConfigMapRef != nil:
			cm, err := o.configMap(ef.ConfigMapRef.Name)
			if err != nil {
				if isOptional(ef.ConfigMapRef.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
			data = cm.Data
		case ef.SecretRef != nil:
			s, err := o.secret(ef.SecretRef.Name)
			if err != nil {
				if isOptional(ef.SecretRef.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		default:
			continue
		}
		// Keys in a stable order; a later source overrides an earlier one.
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			from = append(from, containerconfig.EnvVar{Name: ef.Prefix + k, Value: data[k]})
		}
	}
	values := map[string]string{}
	for _, e := range c.Env {
		if e.Value != "" || e.ValueFrom == nil {
			continue
		}
		switch {
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := o.configMap(ref.Name)
			if err != nil {
				if isOptional(ref.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if isOptional(ref.Optional) {
					continue
				}
				return fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
			}
			values[e.Name] = v
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, err := o.secret(ref.Name)
			if err != nil {
				if isOptional(ref.Optional) && apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if isOptional(ref.Optional) {
					continue
				}
				return fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
			}
			values[e.Name] = string(v)
		}
	}
	opts.EnvFrom, opts.EnvValues, opts.ServiceEnv = from, values, svcEnv
	return nil
}

// objects reads and caches the ConfigMaps and Secrets of one Fill.
type objects struct {
	r       *Resolver
	ctx     context.Context
	ns      string
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (o *objects) configMap(name string) (*v1.ConfigMap, error) {
	if cm, ok := o.cms[name]; ok {
		return cm, nil
	}
	if o.r.cfg.Objects == nil {
		return nil, fmt.Errorf("couldn't get configMap %s/%s, no kubeClient defined", o.ns, name)
	}
	cm, err := o.r.cfg.Objects.GetConfigMap(o.ctx, o.ns, name)
	if err != nil {
		return nil, apiError(err, "configmap", name)
	}
	o.cms[name] = cm
	return cm, nil
}

func (o *objects) secret(name string) (*v1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	if o.r.cfg.Objects == nil {
		return nil, fmt.Errorf("couldn't get secret %s/%s, no kubeClient defined", o.ns, name)
	}
	s, err := o.r.cfg.Objects.GetSecret(o.ctx, o.ns, name)
	if err != nil {
		return nil, apiError(err, "secret", name)
	}
	o.secrets[name] = s
	return s, nil
}

// apiError is the kubelet's error for a failed read: a missing object is its
// object cache's NotFound (`configmap "x" not found`), anything else the
// apiserver's error as it came.
func apiError(err error, resource, name string) error {
	if errdefs.IsNotFound(err) || apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	}
	var status *apierrors.StatusError
	if errors.As(err, &status) {
		return status
	}
	return err
}

func isOptional(b *bool) bool { return b != nil && *b }

// serviceEnv is the pod's service link variables: default/kubernetes always,
// and with enableServiceLinks (nil: true, the API's default) every Service
// of the pod's namespace; only Services with a cluster IP (not headless,
// not ExternalName).
func (r *Resolver) serviceEnv(pod *v1.Pod) (map[string]string, error) {
	env := map[string]string{}
	if r.cfg.Services == nil {
		return env, nil
	}
	services, err := r.cfg.Services.List()
	if err != nil {
		return env, fmt.Errorf("failed to list services when setting up env vars")
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	chosen := map[string]*v1.Service{}
	for _, s := range services {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == v1.ClusterIPNone {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && s.Name == masterService:
			if _, ok := chosen[s.Name]; !ok {
				chosen[s.Name] = s
			}
		case s.Namespace == pod.Namespace && links:
			chosen[s.Name] = s
		}
	}
	for _, s := range chosen {
		for k, v := range ServiceVars(s) {
			env[k] = v
		}
	}
	return env, nil
}

// ServiceVars are the variables a Service with a cluster IP gives a
// container: NAME_SERVICE_HOST, NAME_SERVICE_PORT (the first port),
// NAME_SERVICE_PORT_<PORTNAME> for named ports, and the Docker link
// variables NAME_PORT and NAME_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}.
func ServiceVars(s *v1.Service) map[string]string {
	env := map[string]string{}
	if len(s.Spec.Ports) == 0 {
		return env
	}
	prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	ip := s.Spec.ClusterIP
	env[prefix+"_SERVICE_HOST"] = ip
	env[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for i, p := range s.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		if p.Name != "" {
			env[prefix+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))] = port
		}
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			env[prefix+"_PORT"] = url
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		env[pp] = url
		env[pp+"_PROTO"] = strings.ToLower(proto)
		env[pp+"_PORT"] = port
		env[pp+"_ADDR"] = ip
	}
	return env
}

// ServiceCache is the Services of the cluster, kept by an informer.
type ServiceCache struct {
	informer cache.SharedIndexInformer
	lister   corelisters.ServiceLister
}

var _ Services = (*ServiceCache)(nil)

// NewServiceCache returns a cache of client's Services; Run fills it.
func NewServiceCache(client kubernetes.Interface) *ServiceCache {
	inf := coreinformers.NewServiceInformer(client, metav1.NamespaceAll, 0, cache.Indexers{})
	return &ServiceCache{informer: inf, lister: corelisters.NewServiceLister(inf.GetIndexer())}
}

// Run watches the Services until ctx ends.
func (c *ServiceCache) Run(ctx context.Context) error {
	c.informer.RunWithContext(ctx)
	return nil
}

// List implements Services.
func (c *ServiceCache) List() ([]*v1.Service, error) { return c.lister.List(labels.Everything()) }

// HasSynced implements Services.
func (c *ServiceCache) HasSynced() bool { return c.informer.HasSynced() }
