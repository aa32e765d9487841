package admission

import (
	"context"

	"k8s.io/apiserver/pkg/admission"
)

// NewReinvocationHandler wraps an admission chain the way kube-apiserver
// does: when a plugin of the mutating phase asks for it (the mutating
// webhook plugin does whenever a webhook changed the object), the whole
// mutating phase runs a second time, with the request's reinvocation
// context marked as a reinvocation. In-tree plugins run again in full (so
// a sidecar a webhook injected gets LimitRange defaults, tolerations and
// the token mount); webhooks run again only as their reinvocationPolicy
// says. The validating phase runs once.
func NewReinvocationHandler(chain admission.Interface) Chain {
	return reinvoker{chain: chain}
}

type reinvoker struct {
	chain admission.Interface
}

// Handles implements admission.Interface.
func (r reinvoker) Handles(op admission.Operation) bool { return r.chain.Handles(op) }

// Admit implements admission.MutationInterface.
func (r reinvoker) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := r.chain.(admission.MutationInterface)
	if !ok {
		return nil
	}
	if err := m.Admit(ctx, a, o); err != nil {
		return err
	}
	rc := a.GetReinvocationContext()
	if rc == nil || !rc.ShouldReinvoke() {
		return nil
	}
	rc.SetIsReinvoke()
	return m.Admit(ctx, a, o)
}

// Validate implements admission.ValidationInterface.
func (r reinvoker) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if v, ok := r.chain.(admission.ValidationInterface); ok {
		return v.Validate(ctx, a, o)
	}
	return nil
}
