package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Owners reads the controllers of one kind (ReplicaSets, DaemonSets, …)
// from an informer cache, to find the owner of a dependent object.
type Owners[O metav1.Object] struct {
	// Kind is the owners' kind, as dependents' controller references name it.
	Kind schema.GroupVersionKind
	// Get returns a cached owner; List those of a namespace.
	Get  func(namespace, name string) (O, error)
	List func(namespace string) ([]O, error)
	// Selector is an owner's label selector.
	Selector func(O) *metav1.LabelSelector
}

// namespaceLister is what OwnersFromLister uses of a client-go lister.
type namespaceLister[O any] interface {
	Get(name string) (O, error)
	List(selector labels.Selector) ([]O, error)
}

// OwnersFromLister reads owners of kind through a client-go lister's
// per-namespace accessor (as appslisters.DaemonSetLister.DaemonSets).
func OwnersFromLister[O metav1.Object, L namespaceLister[O]](kind schema.GroupVersionKind, byNamespace func(string) L, selector func(O) *metav1.LabelSelector) Owners[O] {
	return Owners[O]{
		Kind:     kind,
		Get:      func(ns, name string) (O, error) { return byNamespace(ns).Get(name) },
		List:     func(ns string) ([]O, error) { return byNamespace(ns).List(labels.Everything()) },
		Selector: selector,
	}
}

// Resolve returns the cached owner that ref (a dependent's controller
// reference in namespace ns; nil for none) names, as upstream's
// resolveControllerRef: of the owners' kind, with ref's UID.
func (o Owners[O]) Resolve(ns string, ref *metav1.OwnerReference) (O, bool) {
	var zero O
	if ref == nil || ref.Kind != o.Kind.Kind {
		return zero, false
	}
	owner, err := o.Get(ns, ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return zero, false
	}
	return owner, true
}

// Of returns the cached owner that controls dep.
func (o Owners[O]) Of(dep metav1.Object) (O, bool) {
	return o.Resolve(dep.GetNamespace(), metav1.GetControllerOfNoCopy(dep))
}

// Matching returns the owners in ns whose (non-empty) selector matches
// set: those that may adopt an orphan labelled so.
func (o Owners[O]) Matching(ns string, set map[string]string) []O {
	all, err := o.List(ns)
	if err != nil {
		return nil
	}
	var out []O
	for _, owner := range all {
		sel, err := metav1.LabelSelectorAsSelector(o.Selector(owner))
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(set)) {
			out = append(out, owner)
		}
	}
	return out
}

// Observer hears of dependents the cache shows created or going, under
// their owner's key (replicaset.Expectations is one).
type Observer interface {
	CreationObserved(ownerKey string)
	DeletionObserved(ownerKey, dependentKey string)
}

// Dependents turns the events of dependents (objects controlled by an
// owner of one kind: a ReplicaSet's pods, a Deployment's ReplicaSets) into
// their owners' keys, as upstream's controllers do: a dependent's owner is
// synced when it appears, changes or goes (the former owner too when its
// controller reference changed), and an orphan's matching owners when its
// labels or controller reference changed (they may adopt it).
type Dependents[O, D metav1.Object] struct {
	Owners Owners[O]
	Queue  *Queue
	// Observer, when set, hears of creations and deletions (a dependent
	// with a deletion timestamp counts as deleted).
	Observer Observer
	// Ready and MinReadySeconds, when set: a dependent that became ready
	// makes its owner sync again MinReadySeconds (and a second) later, when
	// it counts as available.
	Ready           func(D) bool
	MinReadySeconds func(O) int32
}

// Handler is the event handler to register on the dependents' informer.
func (d *Dependents[O, D]) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { d.added(obj.(D)) },
		UpdateFunc: func(old, cur any) { d.updated(old.(D), cur.(D)) },
		DeleteFunc: d.deleted,
	}
}

func (d *Dependents[O, D]) added(dep D) {
	if dep.GetDeletionTimestamp() != nil {
		d.deleted(dep)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(dep); ref != nil {
		if owner, ok := d.Owners.Resolve(dep.GetNamespace(), ref); ok {
			key, _ := KeyFunc(owner)
			if d.Observer != nil {
				d.Observer.CreationObserved(key)
			}
			d.Queue.Add(key)
		}
		return
	}
	d.enqueueMatching(dep)
}

func (d *Dependents[O, D]) updated(old, cur D) {
	if old.GetResourceVersion() == cur.GetResourceVersion() {
		return
	}
	labelsChanged := !equality.Semantic.DeepEqual(old.GetLabels(), cur.GetLabels())
	if cur.GetDeletionTimestamp() != nil {
		// Counted as gone as soon as it is going, not when it is removed.
		d.deleted(cur)
		if labelsChanged {
			d.deleted(old)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	refChanged := oldRef != nil && (curRef == nil || *oldRef != *curRef)
	if refChanged {
		if owner, ok := d.Owners.Resolve(old.GetNamespace(), oldRef); ok {
			d.Queue.Enqueue(owner)
		}
	}
	if curRef == nil {
		if labelsChanged || refChanged {
			d.enqueueMatching(cur)
		}
		return
	}
	owner, ok := d.Owners.Resolve(cur.GetNamespace(), curRef)
	if !ok {
		return
	}
	d.Queue.Enqueue(owner)
	if d.Ready != nil && !d.Ready(old) && d.Ready(cur) {
		if s := d.MinReadySeconds(owner); s > 0 {
			d.Queue.EnqueueAfter(owner, time.Duration(s)*time.Second+time.Second)
		}
	}
}

func (d *Dependents[O, D]) deleted(obj any) {
	dep, ok := Object[D](obj)
	if !ok {
		return
	}
	owner, ok := d.Owners.Of(dep)
	if !ok {
		return
	}
	key, _ := KeyFunc(owner)
	if d.Observer != nil {
		depKey, _ := KeyFunc(dep)
		d.Observer.DeletionObserved(key, depKey)
	}
	d.Queue.Add(key)
}

func (d *Dependents[O, D]) enqueueMatching(dep D) {
	for _, owner := range d.Owners.Matching(dep.GetNamespace(), dep.GetLabels()) {
		d.Queue.Enqueue(owner)
	}
}
