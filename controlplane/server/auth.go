package server

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/authentication"
	"berth/controlplane/authorization/node"
	"berth/controlplane/authorization/rbac"
	"berth/controlplane/authorization/rbac/bootstrap"
	"berth/controlplane/authorization/union"
	"berth/controlplane/controller"
	"berth/controlplane/controller/clusterroleaggregation"
	"berth/controlplane/pki"
	"berth/controlplane/resources"
	"berth/internal/errdefs"
)

// authStartTimeout bounds the wait for the apiserver to answer the
// bootstrap policy writes and for the authorizers' caches to fill.
const authStartTimeout = 2 * time.Minute

// DefaultAgentTokenTTL is how long the first join token lasts, as kubeadm
// init's --token-ttl; NoTokenExpiry is Config.AgentTokenTTL for a token
// that never expires.
const (
	DefaultAgentTokenTTL = 24 * time.Hour
	NoTokenExpiry        = time.Duration(-1)
)

// validateAuth checks the authentication settings of c.
func validateAuth(c *Config) error {
	switch {
	case c.AgentTokenTTL == 0:
		c.AgentTokenTTL = DefaultAgentTokenTTL
	case c.AgentTokenTTL < 0 && c.AgentTokenTTL != NoTokenExpiry:
		return fmt.Errorf("server config: --token-ttl %s: must not be negative: %w", c.AgentTokenTTL, errdefs.ErrInvalidArgument)
	}
	if c.TokenAuthFile != "" {
		if _, err := authentication.LoadTokenFile(c.TokenAuthFile); err != nil {
			return fmt.Errorf("server config: --token-auth-file: %w", err)
		}
	}
	return nil
}

// serverAuth is the server's authentication chain and its authorizers
// (Node, then RBAC; system:masters always allowed), fed by informers on
// the loopback client.
type serverAuth struct {
	authn       *authentication.Authenticator
	authz       *union.Authorizer
	node        *node.Authorizer
	client      kubernetes.Interface
	informers   informers.SharedInformerFactory
	aggregation *clusterroleaggregation.Controller
	agentToken  string
	// agentTokenExpires is the new join token's expiry (zero: never);
	// nil: the token is not new, its secret is left as it is.
	agentTokenExpires *time.Time
	log               *slog.Logger
}

// newAuth builds authentication and authorization and adds the review
// APIs (TokenReview, the access reviews) to set. The agent join token
// (DataDir/agent-token) is a bootstrap token: start creates its secret.
// apiAudiences are the audiences the apiserver identifies as; tokens are
// further bearer-token authenticators (service-account tokens).
func (s *Server) newAuth(rc *rest.Config, creds *pki.Bundle, set *resources.Set, apiAudiences []string, tokens ...authenticator.Token) (*serverAuth, error) {
	cfg := s.cfg
	authn, err := s.newAuthenticator(creds, set, apiAudiences, tokens)
	if err != nil {
		return nil, err
	}

	src := rest.CopyConfig(rc)
	src.UserAgent = "berth-authorizer"
	client, err := kubernetes.NewForConfig(src)
	if err != nil {
		return nil, fmt.Errorf("server: authorizer client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	rbacInf := factory.Rbac().V1()
	rbacAuthz, err := rbac.New(rbac.Config{
		Roles: rbacInf.Roles().Lister(), RoleBindings: rbacInf.RoleBindings().Lister(),
		ClusterRoles: rbacInf.ClusterRoles().Lister(), ClusterRoleBindings: rbacInf.ClusterRoleBindings().Lister(),
	})
	if err != nil {
		return nil, err
	}
	pods := factory.Core().V1().Pods()
	// The graph reads only a pod's name, namespace and spec: keep no more.
	if err := pods.Informer().SetTransform(slimPod); err != nil {
		return nil, fmt.Errorf("server: pod informer: %w", err)
	}
	nodeAuthz, err := node.New(node.Config{Pods: pods, PersistentVolumes: factory.Core().V1().PersistentVolumes()})
	if err != nil {
		return nil, err
	}
	authz, err := union.New(union.Config{Authorizers: []authorizer.Authorizer{nodeAuthz, rbacAuthz}})
	if err != nil {
		return nil, err
	}
	aggregation, err := clusterroleaggregation.New(clusterroleaggregation.Config{Config: controller.Config{
		Client: client, Informers: factory, Logger: cfg.Logger.With("component", "clusterrole-aggregation"),
	}})
	if err != nil {
		return nil, err
	}
	if err := set.GuardRBAC(resources.RBACGuardConfig{Authorizer: authz, Rules: authz, RoleRefRules: rbacAuthz.RoleRefRules}); err != nil {
		return nil, err
	}
	reviews, err := resources.ReviewResources(resources.ReviewConfig{Tokens: authn, APIAudiences: apiAudiences, Authorizer: authz, Rules: authz})
	if err != nil {
		return nil, err
	}
	if err := set.Add(reviews...); err != nil {
		return nil, err
	}
	var expires *time.Time
	if creds.AgentTokenCreated {
		t := time.Time{}
		if cfg.AgentTokenTTL != NoTokenExpiry {
			t = time.Now().Add(cfg.AgentTokenTTL)
		}
		expires = &t
	}
	return &serverAuth{authn: authn, authz: authz, node: nodeAuthz, client: client, informers: factory,
		aggregation: aggregation, agentToken: creds.AgentToken, agentTokenExpires: expires, log: cfg.Logger}, nil
}

// newAuthenticator authenticates client certificates of the cluster CA,
// the token file's tokens, bootstrap tokens (their secrets read from set's
// store) and tokens' further bearer tokens.
func (s *Server) newAuthenticator(creds *pki.Bundle, set *resources.Set, apiAudiences []string, tokens []authenticator.Token) (*authentication.Authenticator, error) {
	cfg := s.cfg
	pool := x509.NewCertPool()
	pool.AddCert(creds.CA)
	secrets := set.ByGVR[corev1.SchemeGroupVersion.WithResource("secrets")]
	if secrets == nil {
		return nil, fmt.Errorf("server: secrets are not served: %w", errdefs.ErrInvalidArgument)
	}
	return authentication.New(authentication.Config{
		ClientCA:      pool,
		TokenAuthFile: cfg.TokenAuthFile,
		BootstrapTokens: func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
			obj, err := secrets.Store.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			sec, ok := obj.(*corev1.Secret)
			if !ok {
				return nil, fmt.Errorf("server: secret store returned %T", obj)
			}
			return sec, nil
		},
		Tokens:       tokens,
		APIAudiences: apiAudiences,
		Anonymous:    cfg.AnonymousAuth,
	})
}

// start runs once the apiserver serves: it reconciles the default RBAC
// policy, creates the agent join token's bootstrap secret, and starts the
// authorizers' informers (stopped when stop closes), returning once their
// caches are filled.
func (a *serverAuth) start(ctx context.Context, stop <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, authStartTimeout)
	defer cancel()
	var res bootstrap.Result
	err := retryUntilServing(ctx, func() error {
		var err error
		res, err = bootstrap.Reconcile(ctx, a.client)
		return err
	})
	if err != nil {
		return fmt.Errorf("server: default RBAC policy: %w", err)
	}
	if len(res.Created)+len(res.Updated) > 0 {
		a.log.Info("default RBAC policy reconciled", "created", len(res.Created), "updated", len(res.Updated))
	}
	if err := retryUntilServing(ctx, a.ensureAgentTokenSecret); err != nil {
		return err
	}
	a.informers.Start(stop)
	for typ, ok := range a.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("server: authorizer cache of %v did not sync: %w", typ, ctx.Err())
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), a.node.HasSynced) {
		return fmt.Errorf("server: node authorizer graph did not sync: %w", ctx.Err())
	}
	return nil
}

// slimPod drops what the Node authorizer's graph does not read (status,
// labels, annotations, managed fields) from the pods its informer caches.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, DeletionTimestamp: pod.DeletionTimestamp},
		Spec: pod.Spec,
	}, nil
}

// component is the ClusterRole aggregation controller.
func (a *serverAuth) component() component {
	return component{name: "clusterrole-aggregation", run: a.aggregation.Run}
}

// retryUntilServing calls f until it succeeds, retrying while the
// apiserver is not ready yet (not listening, or admission's caches still
// filling: 403 "not yet ready to handle request"); invalid requests are
// not retried.
func retryUntilServing(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// agentTokenDescription describes the agent join token's secret.
const agentTokenDescription = "berth agent join token (the server's DATA-DIR/agent-token)"

// ensureAgentTokenSecret creates the kube-system secret that makes a newly
// generated join token a bootstrap token (replacing one of another type
// under its name). A token generated earlier is left alone: once expired or
// deleted (`berth token delete`) it stays so, and only a warning says that
// agents cannot join with it.
func (a *serverAuth) ensureAgentTokenSecret() error {
	ctx := context.Background()
	if a.agentTokenExpires == nil {
		id, _, err := authentication.ParseBootstrapToken(a.agentToken)
		if err != nil {
			return err
		}
		_, err = a.client.CoreV1().Secrets(authentication.BootstrapTokenNamespace).Get(ctx, authentication.BootstrapTokenSecretPrefix+id, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			a.log.Warn("the join token in DATA-DIR/agent-token has expired or was deleted; make a new one with `berth token create`", "id", id)
			return nil
		}
		return err
	}
	want, err := authentication.BootstrapTokenSecret(a.agentToken, agentTokenDescription, *a.agentTokenExpires)
	if err != nil {
		return err
	}
	secrets := a.client.CoreV1().Secrets(want.Namespace)
	have, err := secrets.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("server: creating the agent bootstrap token secret: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("server: reading the agent bootstrap token secret: %w", err)
	}
	if have.Type == want.Type && sameData(have.Data, want.Data) {
		return nil
	}
	if have.Type != want.Type {
		// The type is immutable: replace the secret.
		if err := secrets.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("server: replacing the agent bootstrap token secret: %w", err)
		}
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("server: replacing the agent bootstrap token secret: %w", err)
		}
		return nil
	}
	upd := have.DeepCopy()
	upd.Data = want.Data
	if _, err := secrets.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("server: updating the agent bootstrap token secret: %w", err)
	}
	return nil
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || string(v) != string(w) {
			return false
		}
	}
	return true
}
