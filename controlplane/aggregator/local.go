package aggregator

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// priority is an APIService's group and version priority.
type priority struct{ group, version int32 }

// priorities are kube-apiserver's for its built-in group-versions
// (cmd/kube-apiserver/app/aggregator.go and the generic ones), so
// discovery orders berth's groups as upstream's.
var priorities = map[schema.GroupVersion]priority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	// The aggregator's own group.
	{Group: "apiregistration.k8s.io", Version: "v1"}: {18000, 15},
}

// defaultPriority is for a local group-version upstream has no entry for.
var defaultPriority = priority{1000, 15}

// unmanaged are local group-versions whose APIService is created once and
// then left to the cluster's administrator: metrics.k8s.io, which berth
// serves itself until a metrics-server's APIService (priorities 100/100,
// as its manifests) replaces it.
var unmanaged = map[schema.GroupVersion]priority{
	{Group: "metrics.k8s.io", Version: "v1beta1"}: {100, 100},
}

// AutomanagedLabel marks the APIServices the aggregator keeps, with the
// value "onstart" (made to match at every start, then left alone), as
// kube-aggregator's autoregistration.
const AutomanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// localAPIService is the local APIService of gv, or nil for one created
// once (unmanaged).
func localAPIService(gv schema.GroupVersion) *apiregistrationv1.APIService {
	if _, ok := unmanaged[gv]; ok {
		return nil
	}
	p, ok := priorities[gv]
	if !ok {
		p = defaultPriority
	}
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group, Labels: map[string]string{AutomanagedLabel: "onstart"}},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
			GroupPriorityMinimum: p.group, VersionPriority: p.version},
	}
}

// ensureLocalUnmanaged creates the APIServices of the unmanaged local
// group-versions that are missing.
func (a *Aggregator) ensureLocalUnmanaged(ctx context.Context) error {
	for _, gv := range a.cfg.Local {
		p, ok := unmanaged[gv]
		if !ok {
			continue
		}
		name := gv.Version + "." + gv.Group
		if _, err := a.apiSvcs.Get(name); err == nil {
			continue
		}
		svc := &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
				GroupPriorityMinimum: p.group, VersionPriority: p.version},
		}
		if _, err := a.agg.ApiregistrationV1().APIServices().Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("aggregator: creating APIService %s: %w", name, err)
		}
	}
	return nil
}
