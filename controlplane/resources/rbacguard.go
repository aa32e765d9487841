package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/authorization/rbac"
	"berth/internal/errdefs"
)

// RBACGuardConfig is what the RBAC escalation checks read.
type RBACGuardConfig struct {
	// Authorizer says whether the caller may "escalate" a role or "bind"
	// one (the verbs that waive the checks).
	Authorizer authorizer.Authorizer
	// Rules lists the caller's own rules.
	Rules authorizer.RuleResolver
	// RoleRefRules returns the rules of the role a binding in a namespace
	// ("" cluster-wide) refers to.
	RoleRefRules func(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error)
}

// GuardRBAC makes creates and updates of Roles, ClusterRoles, RoleBindings
// and ClusterRoleBindings refuse privilege escalation, as upstream's RBAC
// storage: a role may grant only rules the caller holds (unless the caller
// may "escalate" it), a binding may refer only to a role whose rules the
// caller holds (unless the caller may "bind" it); only holders of every
// permission may set a ClusterRole's aggregationRule. system:masters is
// exempt.
func (s *Set) GuardRBAC(cfg RBACGuardConfig) error {
	if cfg.Authorizer == nil || cfg.Rules == nil || cfg.RoleRefRules == nil {
		return fmt.Errorf("resources: RBACGuardConfig.Authorizer, Rules and RoleRefRules are required: %w", errdefs.ErrInvalidArgument)
	}
	g := &rbacGuard{cfg: cfg}
	for resource, check := range map[string]func(context.Context, user.Info, runtime.Object, runtime.Object) error{
		"roles": g.checkRole, "clusterroles": g.checkRole, "rolebindings": g.checkBinding, "clusterrolebindings": g.checkBinding,
	} {
		res := s.ByGVR[rbacv1.SchemeGroupVersion.WithResource(resource)]
		if res == nil {
			return fmt.Errorf("resources: %s are not served: %w", resource, errdefs.ErrInvalidArgument)
		}
		res.Store = &guardedStore{StandardStorage: res.Store, check: check}
	}
	return nil
}

type rbacGuard struct {
	cfg RBACGuardConfig
}

// fullAuthority is every permission: what setting an aggregationRule needs.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// checkRole refuses a Role or ClusterRole granting more than the caller holds.
func (g *rbacGuard) checkRole(ctx context.Context, u user.Info, obj, old runtime.Object) error {
	var rules, oldRules []rbacv1.PolicyRule
	var aggregation *rbacv1.AggregationRule
	var namespace, name, resource string
	switch r := obj.(type) {
	case *rbacv1.Role:
		rules, namespace, name, resource = r.Rules, r.Namespace, r.Name, "roles"
		if o, ok := old.(*rbacv1.Role); ok {
			oldRules = o.Rules
		}
	case *rbacv1.ClusterRole:
		rules, name, resource, aggregation = r.Rules, r.Name, "clusterroles", r.AggregationRule
		if o, ok := old.(*rbacv1.ClusterRole); ok {
			oldRules = o.Rules
			if apiequality.Semantic.DeepEqual(o.AggregationRule, r.AggregationRule) {
				aggregation = nil
			}
		}
		if aggregation != nil && len(aggregation.ClusterRoleSelectors) == 0 {
			aggregation = nil
		}
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("unexpected object of type %T", obj))
	}
	if g.allowed(ctx, u, "escalate", resource, namespace, name) {
		return nil
	}
	gr := rbacv1.Resource(resource)
	if old == nil || !apiequality.Semantic.DeepEqual(rules, oldRules) {
		if err := rbac.ConfirmNoEscalation(ctx, g.cfg.Rules, u, namespace, rules); err != nil {
			return apierrors.NewForbidden(gr, name, errors.New(statusMessage(err)))
		}
	}
	if aggregation != nil {
		if err := rbac.ConfirmNoEscalation(ctx, g.cfg.Rules, u, "", fullAuthority); err != nil {
			return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// checkBinding refuses a binding to a role the caller does not hold.
func (g *rbacGuard) checkBinding(ctx context.Context, u user.Info, obj, old runtime.Object) error {
	var ref rbacv1.RoleRef
	var namespace, name, resource string
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		ref, namespace, name, resource = b.RoleRef, b.Namespace, b.Name, "rolebindings"
	case *rbacv1.ClusterRoleBinding:
		ref, name, resource = b.RoleRef, b.Name, "clusterrolebindings"
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("unexpected object of type %T", obj))
	}
	switch o := old.(type) {
	case *rbacv1.RoleBinding:
		if o.RoleRef == ref {
			return nil
		}
	case *rbacv1.ClusterRoleBinding:
		if o.RoleRef == ref {
			return nil
		}
	}
	roleResource := "clusterroles"
	if ref.Kind == "Role" {
		roleResource = "roles"
	}
	// Asked in the binding's namespace, as upstream: a RoleBinding may
	// delegate binding a ClusterRole within one namespace.
	if g.allowed(ctx, u, "bind", roleResource, namespace, ref.Name) {
		return nil
	}
	gr := rbacv1.Resource(resource)
	rules, err := g.cfg.RoleRefRules(ref, namespace)
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			// A binding to a role that does not exist yet grants nothing
			// the caller could not already do: upstream refuses it unless
			// the caller may bind; so does berth.
			return apierrors.NewForbidden(gr, name, fmt.Errorf("%v; the caller may not bind it", err))
		}
		return apierrors.NewInternalError(err)
	}
	if err := rbac.ConfirmNoEscalation(ctx, g.cfg.Rules, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, errors.New(statusMessage(err)))
	}
	return nil
}

// allowed reports whether the caller may do verb on the named role.
func (g *rbacGuard) allowed(ctx context.Context, u user.Info, verb, resource, namespace, name string) bool {
	d, _, _ := g.cfg.Authorizer.Authorize(ctx, authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: rbacv1.GroupName,
		APIVersion: "*", Resource: resource, Namespace: namespace, Name: name, ResourceRequest: true})
	return d == authorizer.DecisionAllow
}

// statusMessage is the message of an API status error, else err's text.
func statusMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return err.Error()
}

// guardedStore runs check on the new (and, on update, the old) object
// before the store writes it.
type guardedStore struct {
	rest.StandardStorage
	check func(ctx context.Context, u user.Info, obj, old runtime.Object) error
}

func (s *guardedStore) verify(ctx context.Context, obj, old runtime.Object) error {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewBadRequest("no user in the request")
	}
	if slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return nil
	}
	return s.check(ctx, u, obj, old)
}

// Create checks obj, then creates it.
func (s *guardedStore) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	if err := s.verify(ctx, obj, nil); err != nil {
		return nil, err
	}
	return s.StandardStorage.Create(ctx, obj, validate, opts)
}

// Update checks the updated object against the old one, then writes it.
func (s *guardedStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return s.StandardStorage.Update(ctx, name, &guardedUpdate{UpdatedObjectInfo: objInfo, store: s}, createValidation, updateValidation, forceAllowCreate, opts)
}

// guardedUpdate checks the object an update computes.
type guardedUpdate struct {
	rest.UpdatedObjectInfo
	store *guardedStore
}

// UpdatedObject computes the new object and checks it.
func (u *guardedUpdate) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	obj, err := u.UpdatedObjectInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, err
	}
	// An update that creates (PUT of a missing object) has no old object.
	if old != nil {
		if m, err := meta.Accessor(old); err == nil && m.GetResourceVersion() == "" {
			old = nil
		}
	}
	if err := u.store.verify(ctx, obj, old); err != nil {
		return nil, err
	}
	return obj, nil
}

// Compile-time check: the guard is still a complete store for the apiserver.
var _ rest.StandardStorage = (*guardedStore)(nil)
