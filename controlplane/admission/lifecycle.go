package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/internal/errdefs"
)

// NamespaceLifecycleName is the plugin's upstream name.
const NamespaceLifecycleName = "NamespaceLifecycle"

// ImmortalNamespaces may never be deleted.
var ImmortalNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// NamespaceLifecycleConfig configures NamespaceLifecycle.
type NamespaceLifecycleConfig struct {
	// Namespaces is the namespace lister (from the apiserver's informer).
	Namespaces corelisters.NamespaceLister
	// Client, when set, is asked directly when the lister does not know a
	// namespace yet (the cache may lag a namespace created a moment ago).
	Client kubernetes.Interface
}

// NamespaceLifecycle refuses new objects in namespaces that do not exist or
// are terminating, and refuses deleting the immortal namespaces.
type NamespaceLifecycle struct {
	*admission.Handler
	cfg      NamespaceLifecycleConfig
	immortal map[string]bool
}

var _ admission.MutationInterface = (*NamespaceLifecycle)(nil)

// NewNamespaceLifecycle validates cfg and returns the plugin.
func NewNamespaceLifecycle(cfg NamespaceLifecycleConfig) (*NamespaceLifecycle, error) {
	if cfg.Namespaces == nil {
		return nil, fmt.Errorf("%s: Config.Namespaces must be set: %w", NamespaceLifecycleName, errdefs.ErrInvalidArgument)
	}
	im := map[string]bool{}
	for _, n := range ImmortalNamespaces {
		im[n] = true
	}
	return &NamespaceLifecycle{
		Handler:  admission.NewHandler(admission.Create, admission.Update, admission.Delete),
		cfg:      cfg,
		immortal: im,
	}, nil
}

// Admit applies the namespace rules. It changes nothing; like upstream it
// runs first in the mutating phase, so doomed requests stop early.
func (l *NamespaceLifecycle) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	isNamespace := a.GetKind().GroupKind() == namespaceKind || isResource(a, namespacesResource, "")
	if isNamespace {
		if a.GetOperation() == admission.Delete && l.immortal[a.GetName()] {
			return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), fmt.Errorf("this namespace may not be deleted"))
		}
		return nil
	}
	if a.GetNamespace() == "" || a.GetOperation() == admission.Delete {
		return nil
	}
	// Access reviews are allowed in any namespace: refusing would leak
	// whether the namespace exists.
	if a.GetResource().Group == "authorization.k8s.io" && a.GetResource().Resource == "localsubjectaccessreviews" {
		return nil
	}
	ns, err := l.cfg.Namespaces.Get(a.GetNamespace())
	if apierrors.IsNotFound(err) && l.cfg.Client != nil {
		ns, err = l.cfg.Client.CoreV1().Namespaces().Get(ctx, a.GetNamespace(), metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return apierrors.NewNotFound(namespacesResource.GroupResource(), a.GetNamespace())
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	if a.GetOperation() != admission.Create || ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	ferr := admission.NewForbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.GetNamespace()))
	if se, ok := ferr.(*apierrors.StatusError); ok && se.ErrStatus.Details != nil {
		se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.GetNamespace()),
			Field:   "metadata.namespace",
		})
	}
	return ferr
}
