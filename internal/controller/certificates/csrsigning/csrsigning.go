package csrsigning

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/api/certificates"
	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "csrsigning"

// DefaultDuration is the longest certificate signed (upstream's
// --cluster-signing-duration default).
const DefaultDuration = 365 * 24 * time.Hour

const (
	backdate = 5 * time.Minute
	// short: certificates shorter than this are not backdated at their end.
	short       = 8 * time.Hour
	minDuration = 10 * time.Minute
)

// Signers are the signer names this controller signs for:
// kubernetes.io/kubelet-serving with the kubelet-serving CA only, the
// others with the cluster CA.
var Signers = []string{
	certificatesv1.KubeAPIServerClientSignerName,
	certificatesv1.KubeAPIServerClientKubeletSignerName,
	certificatesv1.KubeletServingSignerName,
	certificates.LegacyUnknownSignerName,
}

// CA is the signing certificate and its key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Controller is the CSR signing controller.
type Controller struct {
	controller.Base
	// Duration caps a certificate's validity (0: DefaultDuration).
	Duration time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	// cas is the CA of each signer signed for.
	cas map[string]CA
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg. ca (the cluster CA) signs
// for every signer of Signers but kubernetes.io/kubelet-serving, which
// kubeletServing signs; with kubeletServing nil, kubelet-serving requests
// are left to another signer: the cluster CA never signs them (see the
// package documentation).
func New(cfg *rest.Config, ca CA, kubeletServing *CA) (*Controller, error) {
	if ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("csrsigning: a CA certificate and key are required")
	}
	cas := map[string]CA{}
	for _, s := range Signers {
		if s != certificatesv1.KubeletServingSignerName {
			cas[s] = ca
		}
	}
	if kubeletServing != nil {
		if kubeletServing.Cert == nil || kubeletServing.Key == nil {
			return nil, errors.New("csrsigning: the kubelet-serving CA needs a certificate and key")
		}
		if kubeletServing.Cert.Equal(ca.Cert) {
			return nil, errors.New("csrsigning: the kubelet-serving CA must not be the cluster CA (clients of the API server would trust node serving certificates)")
		}
		cas[certificatesv1.KubeletServingSignerName] = *kubeletServing
	}
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, cas: cas}, nil
}

// Check applies the signer's own checks to a request; ok is false for
// signers this controller does not sign for.
func Check(signer string, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (ok bool, err error) {
	switch signer {
	case certificatesv1.KubeletServingSignerName:
		return true, certificates.ValidateKubeletServing(req, usages)
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return true, certificates.ValidateKubeletClient(req, usages)
	case certificatesv1.KubeAPIServerClientSignerName:
		return true, certificates.ValidateAPIServerClient(usages)
	case certificates.LegacyUnknownSignerName:
		return true, nil
	}
	return false, nil
}

// Duration is the validity of a certificate asked for with
// expirationSeconds (nil: max), between 10 minutes and max.
func Duration(expirationSeconds *int32, max time.Duration) time.Duration {
	if expirationSeconds == nil {
		return max
	}
	d := time.Duration(*expirationSeconds) * time.Second
	switch {
	case d > max:
		return max
	case d < minDuration:
		return minDuration
	}
	return d
}

var keyUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// Sign issues the certificate for req (PEM) valid for d from now.
func Sign(ca CA, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, d time.Duration, now time.Time) ([]byte, error) {
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("unable to verify certificate request signature: %w", err)
	}
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	var unknown []string
	for _, u := range usages {
		if k, ok := keyUsages[u]; ok {
			ku |= k
		} else if e, ok := extKeyUsages[u]; ok {
			if !slices.Contains(eku, e) {
				eku = append(eku, e)
			}
		} else {
			unknown = append(unknown, string(u))
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unrecognized usage values: %q", unknown)
	}
	slices.Sort(eku)
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		KeyUsage:              ku,
		ExtKeyUsage:           eku,
		BasicConstraintsValid: true,
		IsCA:                  false,
		NotBefore:             now.Add(-backdate),
	}
	if d < short {
		tmpl.NotAfter = now.Add(d)
	} else {
		tmpl.NotAfter = tmpl.NotBefore.Add(d)
	}
	caEnd := ca.Cert.NotAfter
	if !now.Before(caEnd) {
		return nil, fmt.Errorf("refusing to sign a certificate: the signer expired at %s", caEnd.Format(time.RFC3339))
	}
	if tmpl.NotAfter.After(caEnd) {
		tmpl.NotAfter = caEnd
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Run watches requests and signs approved ones with workers workers until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	max := c.Duration
	if max <= 0 {
		max = DefaultDuration
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	b := controller.NewBuilder(controller.Config{Name: Name, QueueName: "certificate", Component: Name, Client: c.Client, Logger: c.Logger})
	inf := b.Informers().Certificates().V1().CertificateSigningRequests()
	lister := inf.Lister()
	b.Watches(inf.Informer(), controller.Added|controller.Updated, func(_, obj any) []string {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && toSign(csr, c.cas) {
			return []string{csr.Name}
		}
		return nil
	})
	log := b.Logger()
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, name string) (reconcile.Result, error) {
			return c.sync(ctx, log, lister.Get, name, max, now())
		}
	})
}

// sync signs request name if it is approved and passes its signer's
// checks, or marks it failed.
func (c *Controller) sync(ctx context.Context, log *slog.Logger, get func(string) (*certificatesv1.CertificateSigningRequest, error),
	name string, max time.Duration, now time.Time) (reconcile.Result, error) {
	csr, err := get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	p := plan(csr, c.cas, max)
	upd := csr.DeepCopy()
	switch {
	case p.Fail != "":
		if p.FailsChecks {
			log.Info("request fails its signer's checks", "csr", name, "signer", csr.Spec.SignerName, "err", p.Fail)
		}
		return reconcile.Result{}, c.fail(ctx, upd, p.Fail)
	case p.Sign == nil:
		return reconcile.Result{}, nil
	}
	req := p.Sign
	cert, err := Sign(c.cas[csr.Spec.SignerName], req, csr.Spec.Usages, p.Duration, now)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("signing %s: %w", name, err)
	}
	upd.Status.Certificate = cert
	if _, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("storing the certificate of %s: %w", name, err)
	}
	log.Info("signed certificate", "csr", name, "signer", csr.Spec.SignerName, "subject", req.Subject.CommonName)
	return reconcile.Result{}, nil
}

// toSign: approved, not failed, no certificate yet, for a signer of cas.
func toSign(csr *certificatesv1.CertificateSigningRequest, cas map[string]CA) bool {
	_, ours := cas[csr.Spec.SignerName]
	return len(csr.Status.Certificate) == 0 && ours &&
		certificates.HasCondition(csr, certificatesv1.CertificateApproved) &&
		!certificates.HasCondition(csr, certificatesv1.CertificateDenied) &&
		!certificates.HasCondition(csr, certificatesv1.CertificateFailed)
}

func (c *Controller) fail(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, msg string) error {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure",
		Message: msg, LastUpdateTime: metav1.Now(),
	})
	_, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("adding failure condition: %w", err)
	}
	return nil
}
