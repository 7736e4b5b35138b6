package csrapproving

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
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
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Informers, when set, is the process's shared informer factory: the
	// controller's informers list and watch with its client (see
	// controller.Config.Shared).
	Informers *reconcile.SharedInformers
	client    kubernetes.Interface
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{client: cs}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Kind is what a request was recognised as.
type Kind int

const (
	// Unrecognised requests are left alone.
	Unrecognised Kind = iota
	// SelfNodeClient: a node asking for its own client certificate.
	SelfNodeClient
	// NodeClient: someone (a bootstrapper) asking for a node client certificate.
	NodeClient
	// NodeServing: a node asking for its own serving certificate.
	NodeServing
)

// Recognize classifies a pending request; for the client kinds, the
// permission a SubjectAccessReview must allow is returned in order of
// preference, as upstream tries selfnodeclient before nodeclient.
func Recognize(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) []Kind {
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		if certificates.ValidateKubeletClient(req, csr.Spec.Usages) != nil {
			return nil
		}
		if csr.Spec.Username == req.Subject.CommonName {
			return []Kind{SelfNodeClient, NodeClient}
		}
		return []Kind{NodeClient}
	case certificatesv1.KubeletServingSignerName:
		if certificates.ValidateKubeletServing(req, csr.Spec.Usages) != nil {
			return nil
		}
		if csr.Spec.Username != req.Subject.CommonName || !slices.Contains(csr.Spec.Groups, certificates.NodesGroup) {
			return nil
		}
		return []Kind{NodeServing}
	}
	return nil
}

// subresource is the SubjectAccessReview permission of a client kind.
func (k Kind) subresource() string {
	switch k {
	case SelfNodeClient:
		return "selfnodeclient"
	case NodeClient:
		return "nodeclient"
	}
	return ""
}

func (k Kind) message() string {
	switch k {
	case SelfNodeClient:
		return "Auto approving self kubelet client certificate after SubjectAccessReview."
	case NodeClient:
		return "Auto approving kubelet client certificate after SubjectAccessReview."
	}
	return "Auto approving kubelet serving certificate: the requesting node's own name and addresses."
}

// ServingSANsMatch reports whether every SAN of req belongs to node: DNS
// names its name or a Hostname/InternalDNS/ExternalDNS address, IPs an
// InternalIP/ExternalIP address. It returns the first SAN that does not.
func ServingSANsMatch(req *x509.CertificateRequest, node *corev1.Node) (bool, string) {
	names, ips := certificates.NodeAddresses(node)
	for _, n := range req.DNSNames {
		if !names[strings.ToLower(n)] {
			return false, n
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return false, ip.String()
		}
	}
	return true, ""
}

// Run watches requests and nodes with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.client, Logger: c.Logger, Shared: c.Informers})
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
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, name string) (reconcile.Result, error) {
			csr, err := csrLister.Get(name)
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			if err != nil {
				return reconcile.Result{}, err
			}
			if !undecided(csr) {
				return reconcile.Result{}, nil
			}
			req, err := certificates.ParseRequest(csr.Spec.Request)
			if err != nil {
				log.Debug("unparsable request left pending", "csr", name, "err", err)
				return reconcile.Result{}, nil
			}
			for _, kind := range Recognize(csr, req) {
				ok, why, err := c.allowed(ctx, kind, csr, req, nodeLister.Get)
				if err != nil {
					return reconcile.Result{}, err
				}
				if !ok {
					log.Debug("recognised request not approved", "csr", name, "kind", kind, "reason", why)
					continue
				}
				return reconcile.Result{}, c.approve(ctx, log, csr, kind)
			}
			return reconcile.Result{}, nil
		}
	})
}

// undecided: a request neither issued nor approved or denied.
func undecided(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) == 0 && !certificates.Decided(csr)
}

// approve adds the Approved condition for kind to csr.
func (c *Controller) approve(ctx context.Context, log *slog.Logger, csr *certificatesv1.CertificateSigningRequest, kind Kind) error {
	upd := csr.DeepCopy()
	upd.Status.Conditions = append(upd.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: kind.message(),
	})
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("approving %s: %w", csr.Name, err)
	}
	log.Info("approved certificate signing request", "csr", csr.Name, "requester", csr.Spec.Username, "signer", csr.Spec.SignerName)
	return nil
}

// allowed decides one recognised kind: a SubjectAccessReview for the
// client kinds, the node's own addresses for serving.
func (c *Controller) allowed(ctx context.Context, kind Kind, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest,
	getNode func(string) (*corev1.Node, error)) (bool, string, error) {
	if kind == NodeServing {
		node, err := getNode(strings.TrimPrefix(req.Subject.CommonName, certificates.NodeUserPrefix))
		if apierrors.IsNotFound(err) {
			return false, "the node has not registered yet", nil
		}
		if err != nil {
			return false, "", err
		}
		if ok, san := ServingSANsMatch(req, node); !ok {
			return false, "subjectAltName " + san + " is not one of the node's addresses", nil
		}
		return true, "", nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests",
			Verb: "create", Subresource: kind.subresource()},
	}}
	got, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	return got.Status.Allowed, "subject access review for " + kind.subresource() + " not allowed", nil
}

func (k Kind) String() string {
	switch k {
	case SelfNodeClient:
		return "selfnodeclient"
	case NodeClient:
		return "nodeclient"
	case NodeServing:
		return "nodeserving"
	}
	return "unrecognised"
}
