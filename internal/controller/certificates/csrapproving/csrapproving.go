package csrapproving

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/api/certificates"
	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "csrapproving"

// Controller is the CSR approving controller.
type Controller struct {
	controller.Base
	// ServiceCIDRs are the cluster's Service ranges, whose addresses a
	// node's serving certificate may not name (nil: DefaultServiceCIDR).
	ServiceCIDRs []netip.Prefix
}

// DefaultServiceCIDR is the Service range assumed when none is given
// (plainkube server's --service-cidr default).
var DefaultServiceCIDR = netip.MustParsePrefix("10.96.0.0/12")

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base}, nil
}

// Run watches requests and nodes with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	csrInf := b.Informers().Certificates().V1().CertificateSigningRequests()
	nodeInf := b.SharedInformers().Core().V1().Nodes()
	csrLister, nodeLister := csrInf.Lister(), nodeInf.Lister()
	b.Watches(csrInf.Informer(), controller.Added|controller.Updated, func(_, obj any) []string {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && undecided(csr) {
			return []string{csr.Name}
		}
		return nil
	}).
		// A node's serving request may wait for its addresses.
		Watches(nodeInf.Informer(), controller.Added|controller.Updated, func(_, obj any) []string {
			node, ok := obj.(*corev1.Node)
			if !ok {
				return nil
			}
			all, _ := csrLister.List(labels.Everything())
			var keys []string
			for _, csr := range all {
				if csr.Spec.SignerName == certificatesv1.KubeletServingSignerName && csr.Spec.Username == certificates.NodeUserPrefix+node.Name && undecided(csr) {
					keys = append(keys, csr.Name)
				}
			}
			return keys
		})
	log := b.Logger()
	serviceCIDRs := c.ServiceCIDRs
	if len(serviceCIDRs) == 0 {
		serviceCIDRs = []netip.Prefix{DefaultServiceCIDR}
	}
	observe := func(ctx context.Context, name string) (State, bool, error) {
		csr, err := csrLister.Get(name)
		if apierrors.IsNotFound(err) {
			return State{}, false, nil
		}
		if err != nil {
			return State{}, false, err
		}
		st := State{CSR: csr, ServiceCIDRs: serviceCIDRs}
		if !undecided(csr) {
			return st, true, nil
		}
		if st.Request, st.ParseErr = certificates.ParseRequest(csr.Spec.Request); st.ParseErr != nil {
			return st, true, nil
		}
		st.Allowed = map[Kind]bool{}
		for _, kind := range Recognize(csr, st.Request) {
			if kind == NodeServing {
				node, err := nodeLister.Get(strings.TrimPrefix(st.Request.Subject.CommonName, certificates.NodeUserPrefix))
				if err != nil && !apierrors.IsNotFound(err) {
					return State{}, false, err
				}
				st.Node = node
				continue
			}
			// Client kinds in order of preference, until one is allowed.
			allowed, err := c.subjectAccessReview(ctx, kind, csr)
			if err != nil {
				return State{}, false, err
			}
			if st.Allowed[kind] = allowed; allowed {
				break
			}
		}
		return st, true, nil
	}
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{
			// SubjectAccessReviews are asked in the controller's context.
			Observe: func(name string) (State, bool, error) { return observe(ctx, name) },
			Plan:    plan, Log: log,
			Apply: func(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
				for _, why := range p.NotApproved {
					log.Debug("request not approved", "csr", st.CSR.Name, "reason", why)
				}
				if p.Deny != "" {
					return reconcile.Result{}, c.decide(ctx, log, st.CSR, certificatesv1.CertificateDenied, DeniedReason, p.Deny)
				}
				if p.Approve == Unrecognised {
					return reconcile.Result{}, nil
				}
				return reconcile.Result{}, c.decide(ctx, log, st.CSR, certificatesv1.CertificateApproved, "AutoApproved", p.Approve.message())
			}}.Reconcile
	})
}

// undecided: a request neither issued nor approved or denied.
func undecided(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) == 0 && !certificates.Decided(csr)
}

// decide adds an Approved or Denied condition to csr.
func (c *Controller) decide(ctx context.Context, log *slog.Logger, csr *certificatesv1.CertificateSigningRequest,
	decision certificatesv1.RequestConditionType, reason, message string) error {
	upd := csr.DeepCopy()
	upd.Status.Conditions = append(upd.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: decision, Status: corev1.ConditionTrue, Reason: reason, Message: message,
	})
	if _, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("adding the %s condition to %s: %w", decision, csr.Name, err)
	}
	if decision == certificatesv1.CertificateDenied {
		log.Warn("denied certificate signing request", "csr", csr.Name, "requester", csr.Spec.Username, "signer", csr.Spec.SignerName, "reason", message)
		return nil
	}
	log.Info("approved certificate signing request", "csr", csr.Name, "requester", csr.Spec.Username, "signer", csr.Spec.SignerName)
	return nil
}

// subjectAccessReview asks whether the requester may make a request of a
// client kind.
func (c *Controller) subjectAccessReview(ctx context.Context, kind Kind, csr *certificatesv1.CertificateSigningRequest) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests",
			Verb: "create", Subresource: kind.subresource()},
	}}
	got, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	return got.Status.Allowed, nil
}
