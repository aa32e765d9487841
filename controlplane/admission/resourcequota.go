package admission

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/controlplane/admission/quota"
	"berth/internal/errdefs"
)

// ResourceQuotaName is the plugin's upstream name.
const ResourceQuotaName = "ResourceQuota"

// quotaRetries bounds how often one charge is retried after a conflict.
const quotaRetries = 8

// ResourceQuotaConfig configures ResourceQuota.
type ResourceQuotaConfig struct {
	// Quotas is the ResourceQuota lister (the apiserver must serve and watch
	// core/v1 resourcequotas and their status subresource).
	Quotas corelisters.ResourceQuotaLister
	// Client writes the charged usage with UpdateStatus and re-reads a quota
	// after a conflict.
	Client kubernetes.Interface
}

// ResourceQuota charges each new object's usage (quota.Usage), and what an
// update adds to a Service's or PersistentVolumeClaim's (a ClusterIP
// Service made NodePort or LoadBalancer, a claim resized), to every
// matching ResourceQuota of its namespace before the object is stored, and
// refuses the request with 403 Forbidden when a hard limit would be
// exceeded. A charge is a compare-and-swap on the quota's status (its
// resourceVersion), retried after conflicts, so concurrent creates — in this
// server or another — can never both take the last unit. Usage freed by
// deletions is given back by the resourcequota controller, which recomputes status.used.
type ResourceQuota struct {
	*admission.Handler
	cfg ResourceQuotaConfig

	// locks serialises charges per namespace in this server, so they do not
	// conflict with each other needlessly; an entry lives while a charge in
	// its namespace is in flight.
	mu    sync.Mutex
	locks map[string]*nsLock
	// written remembers the quotas this server wrote last, since the lister
	// may not have seen them yet.
	written map[string]*corev1.ResourceQuota
}

var _ admission.ValidationInterface = (*ResourceQuota)(nil)

// NewResourceQuota validates cfg and returns the plugin.
func NewResourceQuota(cfg ResourceQuotaConfig) (*ResourceQuota, error) {
	if cfg.Quotas == nil || cfg.Client == nil {
		return nil, fmt.Errorf("%s: Config.Quotas and Config.Client must be set: %w", ResourceQuotaName, errdefs.ErrInvalidArgument)
	}
	return &ResourceQuota{
		Handler: admission.NewHandler(admission.Create, admission.Update),
		cfg:     cfg,
		locks:   map[string]*nsLock{},
		written: map[string]*corev1.ResourceQuota{},
	}, nil
}

// nsLock is a namespace's charge lock and how many charges hold or wait
// for it.
type nsLock struct {
	sync.Mutex
	users int
}

// lockNamespace takes ns's charge lock; the returned function releases it
// and forgets the lock once nobody else holds or waits for it.
func (r *ResourceQuota) lockNamespace(ns string) func() {
	r.mu.Lock()
	l := r.locks[ns]
	if l == nil {
		l = &nsLock{}
		r.locks[ns] = l
	}
	l.users++
	r.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		r.mu.Lock()
		if l.users--; l.users == 0 {
			delete(r.locks, ns)
		}
		r.mu.Unlock()
	}
}

// Validate charges the request's usage or refuses it.
func (r *ResourceQuota) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetNamespace() == "" || a.GetObject() == nil {
		return nil
	}
	gr := a.GetResource().GroupResource()
	var usage corev1.ResourceList
	switch a.GetOperation() {
	case admission.Create:
		usage = quota.Usage(gr, a.GetObject())
	case admission.Update:
		if !quota.ChargedOnUpdate(gr) || a.GetOldObject() == nil {
			return nil
		}
		usage = quota.SubtractNonNegative(quota.Usage(gr, a.GetObject()), quota.Usage(gr, a.GetOldObject()))
	default:
		return nil
	}
	if len(usage) == 0 {
		return nil
	}
	defer r.lockNamespace(a.GetNamespace())()

	quotas, err := r.cfg.Quotas.ResourceQuotas(a.GetNamespace()).List(labels.Everything())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	sort.Slice(quotas, func(i, j int) bool { return quotas[i].Name < quotas[j].Name })
	r.forgetUnlisted(a.GetNamespace(), quotas)
	for _, q := range quotas {
		if err := r.charge(ctx, a, r.freshest(q), usage); err != nil {
			return err
		}
	}
	return nil
}

// charge checks and writes one quota, re-reading it after each conflict.
func (r *ResourceQuota) charge(ctx context.Context, a admission.Attributes, q *corev1.ResourceQuota, usage corev1.ResourceList) error {
	for attempt := 0; ; attempt++ {
		if !quota.Matches(q, a.GetObject()) {
			return nil
		}
		constrained := quota.Intersect(q.Spec.Hard, usage)
		if len(constrained) == 0 {
			return nil
		}
		var unknown []string
		for _, n := range constrained {
			if _, ok := q.Status.Used[n]; !ok {
				unknown = append(unknown, string(n))
			}
		}
		if len(unknown) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(unknown, ",")))
		}
		requested := quota.Mask(usage, constrained)
		newUsed := quota.Add(q.Status.Used, requested)
		var exceeded []corev1.ResourceName
		for _, n := range constrained {
			hard, used := q.Spec.Hard[n], newUsed[n]
			if used.Cmp(hard) > 0 {
				exceeded = append(exceeded, n)
			}
		}
		if len(exceeded) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				q.Name,
				quota.PrettyPrint(quota.Mask(requested, exceeded)),
				quota.PrettyPrint(quota.Mask(q.Status.Used, exceeded)),
				quota.PrettyPrint(quota.Mask(q.Spec.Hard, exceeded))))
		}
		if a.IsDryRun() {
			return nil
		}
		updated := q.DeepCopy()
		updated.Status.Used = newUsed
		if updated.Status.Hard == nil {
			updated.Status.Hard = q.Spec.Hard.DeepCopy()
		}
		written, err := r.cfg.Client.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err == nil {
			r.remember(written)
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= quotaRetries {
			return apierrors.NewInternalError(fmt.Errorf("resource quota %s/%s: charge usage: %w", q.Namespace, q.Name, err))
		}
		// Someone else charged this quota first: read it again and re-check.
		q, err = r.cfg.Client.CoreV1().ResourceQuotas(q.Namespace).Get(ctx, q.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return apierrors.NewInternalError(err)
		}
	}
}

func (r *ResourceQuota) remember(q *corev1.ResourceQuota) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written[q.Namespace+"/"+q.Name] = q
}

// forgetUnlisted drops what this server remembers writing of ns's quotas
// that are no longer listed (deleted).
func (r *ResourceQuota) forgetUnlisted(ns string, listed []*corev1.ResourceQuota) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, q := range r.written {
		if q.Namespace == ns && !slices.ContainsFunc(listed, func(l *corev1.ResourceQuota) bool { return l.Name == q.Name }) {
			delete(r.written, key)
		}
	}
}

// freshest returns whichever is newer: the lister's quota or the one this
// server wrote last (resourceVersions are etcd revisions, compared as numbers).
func (r *ResourceQuota) freshest(listed *corev1.ResourceQuota) *corev1.ResourceQuota {
	key := listed.Namespace + "/" + listed.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	mine, ok := r.written[key]
	if !ok {
		return listed
	}
	if mine.UID != listed.UID {
		delete(r.written, key)
		return listed
	}
	lv, lerr := strconv.ParseUint(listed.ResourceVersion, 10, 64)
	mv, merr := strconv.ParseUint(mine.ResourceVersion, 10, 64)
	if lerr == nil && merr == nil && lv >= mv {
		delete(r.written, key) // the lister caught up
		return listed
	}
	return mine
}
