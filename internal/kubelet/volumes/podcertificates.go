package volumes

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// podCertificate projections, as upstream's kubelet: for each source the
// agent makes a key of the asked type and, as the node, creates a
// PodCertificateRequest (certificates.k8s.io/v1) naming the pod, its
// service account and the node with their UIDs, carrying a PKCS#10
// request signed by the key (the proof of possession), the
// maxExpirationSeconds and the user annotations. The volume's set-up
// fails ("not issued yet", retried with the set-up's back-off) until the
// signer issues the request; then the key and the chain are written. A
// denied or failed request is a permanent error for that source. At the
// issued beginRefreshAt (plus up to 5 minutes of jitter) a new key and
// request are made while the old credentials stay in place, and the new
// ones replace them once issued. A request that stays absent for 10
// minutes is taken as deleted and made again.

const (
	podCertificateJitter = 5 * time.Minute
	// pcrAssumeDeleted: a request not found this long after its creation
	// was deleted (and not merely not yet visible).
	pcrAssumeDeleted = 10 * time.Minute
)

type podCertificateKey struct {
	podUID types.UID
	volume string
	source int
}

// podCertificateState is one source's credentials and request in flight.
type podCertificateState struct {
	mu             sync.Mutex
	keyPEM, chain  []byte // issued credentials, or nil
	beginRefreshAt time.Time
	pendingKey     []byte // the key of the request in flight
	pendingName    string
	pendingSince   time.Time
	err            error // denied or failed: permanent
}

type podCertificateCache struct {
	mu sync.Mutex
	m  map[podCertificateKey]*podCertificateState
}

func (c *podCertificateCache) state(k podCertificateKey) *podCertificateState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[podCertificateKey]*podCertificateState{}
	}
	s := c.m[k]
	if s == nil {
		s = &podCertificateState{}
		c.m[k] = s
	}
	return s
}

// forget drops the credentials of pod uid (live == nil) or of the pods
// not in live.
func (c *podCertificateCache) forget(uid types.UID, live map[types.UID]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if (live == nil && k.podUID == uid) || (live != nil && !live[k.podUID]) {
			delete(c.m, k)
		}
	}
}

// podCertificateRequester is what a pod certificate's request needs
// beyond the pod: the client that acts as the node, and the node.
type podCertificateRequester struct {
	client   kubernetes.Interface
	nodeName string
}

// credentials are the PEM key and certificate chain of source index of
// pod's projected volume, asking for them or their refresh when needed.
func (c *podCertificateCache) credentials(ctx context.Context, r podCertificateRequester, pod *corev1.Pod, volume string, index int, src *corev1.PodCertificateProjection, now time.Time) ([]byte, []byte, error) {
	s := c.state(podCertificateKey{pod.UID, volume, index})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, nil, s.err
	}
	if s.pendingName != "" {
		if err := s.checkPending(ctx, r.client, pod.Namespace, now); err != nil {
			return nil, nil, err
		}
	}
	if s.pendingName == "" && (s.keyPEM == nil || !now.Before(s.beginRefreshAt)) {
		key, pcr, err := createPodCertificateRequest(ctx, r, pod, src)
		if err != nil {
			if s.keyPEM != nil {
				return s.keyPEM, s.chain, nil // refresh failed: the old ones still serve
			}
			return nil, nil, fmt.Errorf("while creating initial PodCertificateRequest: %w", err)
		}
		s.pendingKey, s.pendingName, s.pendingSince = key, pcr.Name, now
	}
	if s.keyPEM == nil {
		return nil, nil, errors.New("credential bundle is not issued yet")
	}
	return s.keyPEM, s.chain, nil
}

// checkPending reads the request in flight and takes its outcome. Only
// a denial or failure is an error; a request that is still pending or
// cannot be read leaves things as they are.
func (s *podCertificateState) checkPending(ctx context.Context, cs kubernetes.Interface, namespace string, now time.Time) error {
	pcr, err := cs.CertificatesV1().PodCertificateRequests(namespace).Get(ctx, s.pendingName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && now.Sub(s.pendingSince) > pcrAssumeDeleted {
		s.pendingName, s.pendingKey = "", nil
		return nil
	}
	if err != nil {
		return nil
	}
	for _, cond := range pcr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied:
			s.err = fmt.Errorf("PodCertificateRequest was permanently denied: reason=%q message=%q", cond.Reason, cond.Message)
		case certificatesv1.PodCertificateRequestConditionTypeFailed:
			s.err = fmt.Errorf("PodCertificateRequest was permanently failed: reason=%q message=%q", cond.Reason, cond.Message)
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			s.keyPEM, s.chain = s.pendingKey, cleanCertificateChain([]byte(pcr.Status.CertificateChain))
			s.beginRefreshAt = now.Add(time.Hour) // a signer that gives none: refresh hourly
			if pcr.Status.BeginRefreshAt != nil {
				s.beginRefreshAt = pcr.Status.BeginRefreshAt.Time
			}
			s.beginRefreshAt = s.beginRefreshAt.Add(mathrand.N(podCertificateJitter))
		default:
			continue
		}
		s.pendingName, s.pendingKey = "", nil
		if s.err != nil {
			s.keyPEM, s.chain = nil, nil
		}
		return s.err
	}
	return nil
}

// createPodCertificateRequest makes a key of src's type and requests a
// certificate for it, as the node, for pod.
func createPodCertificateRequest(ctx context.Context, r podCertificateRequester, pod *corev1.Pod, src *corev1.PodCertificateProjection) ([]byte, *certificatesv1.PodCertificateRequest, error) {
	saName := pod.Spec.ServiceAccountName
	if saName == "" {
		saName = "default"
	}
	sa, err := r.client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, saName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("while fetching service account: %w", err)
	}
	node, err := r.client.CoreV1().Nodes().Get(ctx, r.nodeName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("while getting node object: %w", err)
	}
	key, err := generatePodCertificateKey(src.KeyType)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating keypair: %w", err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating stub PKCS#10 request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("while marshaling key to PKCS#8: %w", err)
	}
	pcr := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       pod.Namespace,
			GenerateName:    "req-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                src.SignerName,
			PodName:                   pod.Name,
			PodUID:                    pod.UID,
			ServiceAccountName:        saName,
			ServiceAccountUID:         sa.UID,
			NodeName:                  types.NodeName(r.nodeName),
			NodeUID:                   node.UID,
			MaxExpirationSeconds:      src.MaxExpirationSeconds,
			StubPKCS10Request:         stub,
			UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}
	pcr, err = r.client.CertificatesV1().PodCertificateRequests(pod.Namespace).Create(ctx, pcr, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("while creating on API: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pcr, nil
}

// generatePodCertificateKey makes a private key of one of the key types
// a podCertificate projection names.
func generatePodCertificateKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case "RSA3072":
		return rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("unknown key type %q", keyType)
}

// cleanCertificateChain keeps only the chain's PEM blocks, as
// CERTIFICATE blocks without headers or text between them.
func cleanCertificateChain(in []byte) []byte {
	var out bytes.Buffer
	for rest := in; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		out.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}))
	}
	return out.Bytes()
}
