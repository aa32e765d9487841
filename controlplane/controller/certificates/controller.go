package certificates

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/controlplane/controller"
	"berth/internal/api/validation"
	"berth/internal/errdefs"
)

// Config configures the Controller.
type Config struct {
	// Client talks to the apiserver (it needs CSRs: list, watch, update
	// /approval and /status; nodes: list, watch; subjectaccessreviews:
	// create).
	Client kubernetes.Interface
	// Signer signs approved requests.
	Signer Signer
	// Logger logs decisions; required.
	Logger *slog.Logger
	// Resync re-examines pending requests this often (serving requests
	// wait for their Node); 30s when 0.
	Resync time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller approves and signs node CSRs (see the package doc).
type Controller struct {
	cfg     Config
	factory informers.SharedInformerFactory
	csrs    certlisters.CertificateSigningRequestLister
	nodes   corelisters.NodeLister
	queue   *controller.Queue
}

// New validates cfg and prepares the informers (started by Run).
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Logger == nil {
		return nil, fmt.Errorf("certificates: Client and Logger are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Signer.CA == nil || cfg.Signer.Key == nil {
		return nil, fmt.Errorf("certificates: Signer.CA and Signer.Key are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	factory := informers.NewSharedInformerFactory(cfg.Client, cfg.Resync)
	loop := controller.Config{Client: cfg.Client, Informers: factory, Logger: cfg.Logger}
	if err := loop.Validate("certificates", 1); err != nil {
		return nil, err
	}
	csrInf, nodeInf := factory.Certificates().V1().CertificateSigningRequests(), factory.Core().V1().Nodes()
	c := &Controller{cfg: cfg, factory: factory, csrs: csrInf.Lister(), nodes: nodeInf.Lister(), queue: controller.NewQueue("certificates", &loop)}
	if err := c.queue.Watch(csrInf.Informer(), controller.On(controller.Added|controller.Updated, c.queue.Enqueue)); err != nil {
		return nil, err
	}
	// A serving request waits for its Node: re-examine pending requests
	// when a node appears or its addresses change.
	if err := c.queue.Watch(nodeInf.Informer(), controller.On(controller.Added|controller.Updated, func(any) { c.enqueuePending() })); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueuePending queues the serving requests not yet decided.
func (c *Controller) enqueuePending() {
	all, err := c.csrs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, csr := range all {
		if csr.Spec.SignerName == KubeletServingSigner && len(csr.Status.Conditions) == 0 {
			c.queue.Add(csr.Name)
		}
	}
}

// Run watches CSRs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	return c.queue.Run(ctx, c.sync)
}

// sync approves and/or signs one CSR.
func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(csr.Status.Certificate) > 0 || hasCondition(csr, certificatesv1.CertificateDenied) || hasCondition(csr, certificatesv1.CertificateFailed) {
		return nil
	}
	if csr.Spec.SignerName != KubeletClientSigner && csr.Spec.SignerName != KubeletServingSigner {
		return nil
	}
	req, err := validation.ParseCSR(csr.Spec.Request)
	if err != nil {
		return c.fail(ctx, csr, fmt.Sprintf("unable to parse csr %q: %v", csr.Name, err))
	}
	if !hasCondition(csr, certificatesv1.CertificateApproved) {
		var node *corev1.Node
		if name, err := nodeSubject(req); err == nil {
			node, _ = c.nodes.Get(name)
		}
		d, err := c.decide(ctx, csr, req, node)
		if err != nil {
			return err
		}
		if !d.Approve {
			c.cfg.Logger.Debug("certificate signing request left pending", "csr", csr.Name, "signer", csr.Spec.SignerName, "requester", csr.Spec.Username, "why", d.Message)
			return nil
		}
		csr = csr.DeepCopy()
		now := metav1.NewTime(c.cfg.Now())
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: d.Reason, Message: d.Message,
			LastUpdateTime: now, LastTransitionTime: now,
		})
		csr, err = c.cfg.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("approve: %w", err)
		}
		c.cfg.Logger.Info("certificate signing request approved", "csr", csr.Name, "signer", csr.Spec.SignerName, "requester", csr.Spec.Username)
	}
	return c.sign(ctx, csr, req)
}

// decide approves a node client request when authorization allows the
// requester one of NodeClientChecks (SubjectAccessReviews), and a serving
// request by ApproveServing. An error (a review that could not be made)
// is retried.
func (c *Controller) decide(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, node *corev1.Node) (Decision, error) {
	if csr.Spec.SignerName == KubeletServingSigner {
		return ApproveServing(csr, req, node), nil
	}
	checks, err := NodeClientChecks(csr, req)
	if err != nil {
		return Decision{Message: err.Error()}, nil
	}
	var tried []string
	for _, check := range checks {
		allowed, err := c.allowed(ctx, csr, check.Attributes)
		if err != nil {
			return Decision{}, err
		}
		if allowed {
			return Decision{Approve: true, Reason: ApprovedReason, Message: check.Message}, nil
		}
		tried = append(tried, check.Attributes.Resource+"/"+check.Attributes.Subresource)
	}
	return Decision{Message: fmt.Sprintf("requester %q may not create %v", csr.Spec.Username, tried)}, nil
}

// allowed asks the apiserver whether the CSR's requester may do attrs.
func (c *Controller) allowed(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, attrs authorizationv1.ResourceAttributes) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(csr.Spec.Extra))
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := c.cfg.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra, ResourceAttributes: &attrs,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review for %q: %w", csr.Spec.Username, err)
	}
	return sar.Status.Allowed, nil
}

// sign issues the certificate of an approved CSR, or marks it Failed when
// the request breaks its signer's rules.
func (c *Controller) sign(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	if _, err := Check(csr.Spec.SignerName, req, csr.Spec.Usages); err != nil {
		if errors.Is(err, errdefs.ErrInvalidArgument) {
			return c.fail(ctx, csr, err.Error())
		}
		return nil
	}
	certPEM, err := c.cfg.Signer.Sign(req, csr.Spec.Usages, csr.Spec.ExpirationSeconds, c.cfg.Now())
	if err != nil {
		return err
	}
	csr = csr.DeepCopy()
	csr.Status.Certificate = certPEM
	if _, err := c.cfg.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	c.cfg.Logger.Info("certificate signing request signed", "csr", csr.Name, "signer", csr.Spec.SignerName, "subject", req.Subject.String())
	return nil
}

// fail sets the Failed condition (reason SignerValidationFailure).
func (c *Controller) fail(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, msg string) error {
	csr = csr.DeepCopy()
	now := metav1.NewTime(c.cfg.Now())
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure", Message: msg,
		LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := c.cfg.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark failed: %w", err)
	}
	c.cfg.Logger.Info("certificate signing request failed", "csr", csr.Name, "signer", csr.Spec.SignerName, "why", msg)
	return nil
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
