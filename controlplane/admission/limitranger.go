package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/internal/errdefs"
)

// LimitRangerName is the plugin's upstream name.
const LimitRangerName = "LimitRanger"

// LimitRangerAnnotation records which defaults LimitRanger set on a pod.
const LimitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRangerConfig configures LimitRanger.
type LimitRangerConfig struct {
	// LimitRanges is the LimitRange lister (the apiserver must serve and
	// watch core/v1 limitranges).
	LimitRanges corelisters.LimitRangeLister
}

// LimitRanger applies the namespace's LimitRanges to new pods: it fills in
// missing container requests and limits from the Container items' defaultRequest
// and default, then enforces min, max and maxLimitRequestRatio per Container
// and per Pod.
type LimitRanger struct {
	*admission.Handler
	lister corelisters.LimitRangeLister
}

var (
	_ admission.MutationInterface   = (*LimitRanger)(nil)
	_ admission.ValidationInterface = (*LimitRanger)(nil)
)

// NewLimitRanger validates cfg and returns the plugin.
func NewLimitRanger(cfg LimitRangerConfig) (*LimitRanger, error) {
	if cfg.LimitRanges == nil {
		return nil, fmt.Errorf("%s: Config.LimitRanges must be set: %w", LimitRangerName, errdefs.ErrInvalidArgument)
	}
	return &LimitRanger{Handler: admission.NewHandler(admission.Create), lister: cfg.LimitRanges}, nil
}

// podAndRanges returns the pod of a pod create and its namespace's LimitRanges.
func (l *LimitRanger) podAndRanges(a admission.Attributes) (*corev1.Pod, []*corev1.LimitRange, error) {
	if !isResource(a, podsResource, "") || a.GetOperation() != admission.Create {
		return nil, nil, nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod, got %T", a.GetObject()))
	}
	ranges, err := l.lister.LimitRanges(a.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Name < ranges[j].Name })
	return pod, ranges, nil
}

// Admit sets default requests and limits and records them in the
// kubernetes.io/limit-ranger annotation.
func (l *LimitRanger) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ranges, err := l.podAndRanges(a)
	if pod == nil || err != nil {
		return err
	}
	for _, lr := range ranges {
		req, lim := containerDefaults(lr)
		if len(req) == 0 && len(lim) == 0 {
			continue
		}
		var notes []string
		for i := range pod.Spec.InitContainers {
			notes = mergeDefaults(&pod.Spec.InitContainers[i], req, lim, "init container", notes)
		}
		for i := range pod.Spec.Containers {
			notes = mergeDefaults(&pod.Spec.Containers[i], req, lim, "container", notes)
		}
		if len(notes) > 0 {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[LimitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
		}
	}
	return nil
}

// containerDefaults returns the default requests and limits of a
// LimitRange's Container items, with the API's defaulting applied (default
// falls back to max, defaultRequest to default).
func containerDefaults(lr *corev1.LimitRange) (corev1.ResourceList, corev1.ResourceList) {
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.Max {
			if _, ok := item.Default[k]; !ok {
				lim[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Default {
			lim[k] = v.DeepCopy()
		}
		for k, v := range lim {
			if _, ok := item.DefaultRequest[k]; !ok {
				req[k] = v.DeepCopy()
			}
		}
		for k, v := range item.DefaultRequest {
			req[k] = v.DeepCopy()
		}
	}
	return req, lim
}

func mergeDefaults(c *corev1.Container, req, lim corev1.ResourceList, kind string, notes []string) []string {
	var setReq, setLim []string
	for k, v := range lim {
		if _, ok := c.Resources.Limits[k]; !ok {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[k] = v.DeepCopy()
			setLim = append(setLim, string(k))
		}
	}
	for k, v := range req {
		if _, ok := c.Resources.Requests[k]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			// A container with a limit but no request gets request = limit,
			// never a default request above its own limit.
			if l, ok := c.Resources.Limits[k]; ok && l.Cmp(v) < 0 {
				v = l
			}
			c.Resources.Requests[k] = v.DeepCopy()
			setReq = append(setReq, string(k))
		}
	}
	if len(setReq) > 0 {
		sort.Strings(setReq)
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setReq, ", "), kind, c.Name))
	}
	if len(setLim) > 0 {
		sort.Strings(setLim)
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLim, ", "), kind, c.Name))
	}
	return notes
}

// Validate enforces min, max and maxLimitRequestRatio.
func (l *LimitRanger) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ranges, err := l.podAndRanges(a)
	if pod == nil || err != nil {
		return err
	}
	var errs []error
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
					errs = append(errs, checkItem(&item, string(corev1.LimitTypeContainer), c.Resources.Requests, c.Resources.Limits)...)
				}
			case corev1.LimitTypePod:
				req, lim := podTotals(pod)
				errs = append(errs, checkItem(&item, string(corev1.LimitTypePod), req, lim)...)
			}
		}
	}
	if len(errs) > 0 {
		return admission.NewForbidden(a, utilerrors.NewAggregate(errs))
	}
	return nil
}

func checkItem(item *corev1.LimitRangeItem, kind string, req, lim corev1.ResourceList) []error {
	var errs []error
	for _, k := range sortedNames(item.Min) {
		if err := minConstraint(kind, string(k), item.Min[k], req, lim); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedNames(item.Max) {
		if err := maxConstraint(kind, string(k), item.Max[k], req, lim); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedNames(item.MaxLimitRequestRatio) {
		if err := ratioConstraint(kind, string(k), item.MaxLimitRequestRatio[k], req, lim); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// podTotals sums the app containers and raises each resource to the
// largest init container's, as the scheduler counts a pod.
func podTotals(pod *corev1.Pod) (corev1.ResourceList, corev1.ResourceList) {
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addTo(req, c.Resources.Requests)
		addTo(lim, c.Resources.Limits)
	}
	for _, c := range pod.Spec.InitContainers {
		maxInto(req, c.Resources.Requests)
		maxInto(lim, c.Resources.Limits)
	}
	return req, lim
}

func addTo(dst, src corev1.ResourceList) {
	for k, v := range src {
		q := dst[k]
		q.Add(v)
		dst[k] = q
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for k, v := range src {
		if q, ok := dst[k]; !ok || q.Cmp(v) < 0 {
			dst[k] = v.DeepCopy()
		}
	}
}

// values returns comparable integers: milli-units when nothing overflows.
func values(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	if req.Value() <= resource.MaxMilliValue && lim.Value() <= resource.MaxMilliValue && enforced.Value() <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return req.Value(), lim.Value(), enforced.Value()
}

func minConstraint(kind, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, reqOK := request[corev1.ResourceName(name)]
	lim, limOK := limit[corev1.ResourceName(name)]
	r, l, e := values(req, lim, enforced)
	switch {
	case !reqOK:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	case limOK && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(kind, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, reqOK := request[corev1.ResourceName(name)]
	lim, limOK := limit[corev1.ResourceName(name)]
	r, l, e := values(req, lim, enforced)
	switch {
	case !limOK:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	case reqOK && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, reqOK := request[corev1.ResourceName(name)]
	lim, limOK := limit[corev1.ResourceName(name)]
	r, l, _ := values(req, lim, enforced)
	if !reqOK || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, enforced.String())
	}
	if !limOK || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, enforced.String())
	}
	observed := float64(l) / float64(r)
	display := observed
	maxRatio := float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed *= 1000
		maxRatio = float64(enforced.MilliValue())
	}
	if observed > maxRatio {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, enforced.String(), display)
	}
	return nil
}
