package tlsbootstrap

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/api/certificates"
	"plainkube.dev/plainkube/internal/pki"
)

// Files under <DataDir>/pki.
const (
	caFile = "ca.crt"
	// clientFile holds the client certificate and its key (as upstream's
	// kubelet-client-current.pem), replaced whole on rotation; client-go
	// reads it at each new connection.
	clientFile      = "kubelet-client-current.pem"
	servingCertFile = "kubelet-serving.crt"
	servingKeyFile  = "kubelet-serving.key"
)

// Node identities, as upstream.
const (
	NodesGroup     = "system:nodes"
	NodeUserPrefix = "system:node:"
)

// minRemaining: a kept certificate with less validity left is replaced.
const minRemaining = 24 * time.Hour

// Options configure Bootstrap.
type Options struct {
	// Server is the API server's URL (https://host:port).
	Server string
	// Token is a bootstrap token; needed only when no valid client
	// certificate is kept.
	Token string
	// CACertHash pins the cluster CA ("sha256:<hex>"), or CAFile names a
	// file holding it (PEM). One of them is required unless a CA is kept
	// from an earlier join.
	CACertHash, CAFile string
	// DataDir keeps the credentials (under pki/).
	DataDir  string
	NodeName string
	// Timeout bounds the wait for a certificate (0: 5 minutes).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Credentials are a joined node's.
type Credentials struct {
	// Config authenticates as system:node:<name> with the client certificate.
	Config *rest.Config
	// CAPEM is the cluster CA.
	CAPEM []byte
	// ClientFile holds the client certificate and key (PEM), read by
	// Config at each new connection and replaced by RotateClient.
	ClientFile string
}

// Bootstrap establishes trust in the server and the node's client
// identity (see the package comment).
func Bootstrap(ctx context.Context, o Options) (*Credentials, error) {
	if o.Server == "" || o.NodeName == "" || o.DataDir == "" {
		return nil, errors.New("tlsbootstrap: the server URL, node name and data directory are required")
	}
	if !strings.HasPrefix(o.Server, "https://") {
		return nil, fmt.Errorf("--server %q: an https:// URL is required", o.Server)
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	dir := filepath.Join(o.DataDir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caPEM, err := establishCA(ctx, o, dir)
	if err != nil {
		return nil, err
	}
	ca, err := pki.ParseCertPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	user := NodeUserPrefix + o.NodeName
	_, _, ok := kept(dir, clientFile, clientFile, func(c *x509.Certificate) bool {
		return signedBy(c, ca) && c.Subject.CommonName == user && slices.Contains(c.Subject.Organization, NodesGroup)
	})
	if ok {
		log.Info("using the kept client certificate", "user", user)
	} else {
		if o.Token == "" {
			return nil, fmt.Errorf("no valid client certificate in %s and no bootstrap token (--token) to ask for one", dir)
		}
		bootstrap := &rest.Config{Host: o.Server, BearerToken: o.Token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
			UserAgent: "plainkube-agent/" + o.NodeName + " (bootstrap)"}
		cs, err := kubernetes.NewForConfig(bootstrap)
		if err != nil {
			return nil, err
		}
		log.Info("asking for a client certificate", "user", user, "server", o.Server)
		certPEM, keyPEM, err := requestCertificate(ctx, cs, o.Timeout, certificatesv1.KubeAPIServerClientKubeletSignerName,
			&x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{NodesGroup}}},
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth})
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		if err := writeFile(filepath.Join(dir, clientFile), append(certPEM, keyPEM...), 0o600); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(dir, clientFile)
	cfg := &rest.Config{Host: o.Server, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM, CertFile: path, KeyFile: path}}
	return &Credentials{Config: cfg, CAPEM: caPEM, ClientFile: path}, nil
}

// RotateAfter is when a client certificate is renewed: at a random point
// between 70% and 90% of its lifetime, as upstream's certificate manager.
func RotateAfter(c *x509.Certificate, now time.Time) time.Duration {
	life := c.NotAfter.Sub(c.NotBefore)
	jitter, _ := rand.Int(rand.Reader, big.NewInt(1000))
	// 70% plus 0 to 20% in steps of 0.02%, in integers: no float
	// rounding below 70%.
	at := c.NotBefore.Add(life/10*7 + life/5000*time.Duration(jitter.Int64()))
	return max(at.Sub(now), 0)
}

// RotateClient renews the node's client certificate until ctx ends: when
// after (nil: RotateAfter) says, it asks as the node itself for a new one
// (a selfnodeclient request the approver allows) and replaces the kept
// file, which new connections use. Failures are retried after a minute.
func RotateClient(ctx context.Context, creds *Credentials, nodeName string, after func(*x509.Certificate, time.Time) time.Duration, log *slog.Logger) {
	if after == nil {
		after = RotateAfter
	}
	if log == nil {
		log = slog.Default()
	}
	for {
		wait := time.Minute
		if b, err := os.ReadFile(creds.ClientFile); err != nil {
			log.Warn("reading the client certificate", "err", err)
		} else if c, err := pki.ParseCertPEM(b); err != nil {
			log.Warn("reading the client certificate", "err", err)
		} else {
			wait = after(c, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if err := renewClient(ctx, creds, nodeName); err != nil {
			if ctx.Err() == nil {
				log.Warn("renewing the client certificate; retrying in a minute", "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Minute):
				}
			}
			continue
		}
		log.Info("renewed the client certificate")
	}
}

func renewClient(ctx context.Context, creds *Credentials, nodeName string) error {
	cs, err := kubernetes.NewForConfig(creds.Config)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := requestCertificate(ctx, cs, 0, certificatesv1.KubeAPIServerClientKubeletSignerName,
		&x509.CertificateRequest{Subject: pkix.Name{CommonName: NodeUserPrefix + nodeName, Organization: []string{NodesGroup}}},
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth})
	if err != nil {
		return err
	}
	return writeFile(creds.ClientFile, append(certPEM, keyPEM...), 0o600)
}

// establishCA returns the cluster CA: from the CA file, else the kept one,
// else cluster-info checked against the pin; a pin given must match.
func establishCA(ctx context.Context, o Options, dir string) ([]byte, error) {
	path := filepath.Join(dir, caFile)
	var caPEM []byte
	switch b, err := os.ReadFile(path); {
	case o.CAFile != "":
		if caPEM, err = os.ReadFile(o.CAFile); err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
	case err == nil:
		caPEM = b
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	case o.CACertHash == "":
		return nil, errors.New("the cluster CA is unknown: give --ca-cert-hash (printed by `plainkube server` in its join command) or --ca-file")
	default:
		if caPEM, err = fetchClusterInfoCA(ctx, o.Server); err != nil {
			return nil, err
		}
	}
	ca, err := pki.ParseCertPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	if o.CACertHash != "" {
		if err := pki.CheckCertHash(ca, o.CACertHash); err != nil {
			return nil, err
		}
	}
	if b, err := os.ReadFile(path); err == nil && !bytes.Equal(b, caPEM) {
		if old, perr := pki.ParseCertPEM(b); perr != nil || !old.Equal(ca) {
			return nil, fmt.Errorf("the cluster CA differs from the one kept in %s from an earlier join; remove %s to join another cluster", path, dir)
		}
	}
	if err := writeFile(path, caPEM, 0o644); err != nil {
		return nil, err
	}
	return caPEM, nil
}

// fetchClusterInfoCA reads kube-public/cluster-info without verifying the
// server (the caller checks the CA it holds against a pin) and returns the
// CA of its kubeconfig.
func fetchClusterInfoCA(ctx context.Context, server string) ([]byte, error) {
	insecure := &rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Timeout: 30 * time.Second}
	cs, err := kubernetes.NewForConfig(insecure)
	if err != nil {
		return nil, err
	}
	cm, err := cs.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading kube-public/cluster-info from %s: %w", server, err)
	}
	kc, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil {
		return nil, fmt.Errorf("kube-public/cluster-info: %w", err)
	}
	for _, c := range kc.Clusters {
		if len(c.CertificateAuthorityData) > 0 {
			return c.CertificateAuthorityData, nil
		}
	}
	return nil, errors.New("kube-public/cluster-info holds no CA certificate")
}

// ServingIssuer returns an Options.IssueServingCert for a joined node: cfg
// is the node's own identity.
func ServingIssuer(cfg *rest.Config, caPEM []byte, dataDir, nodeName string, log *slog.Logger) func(dnsNames []string, ips []net.IP) ([]byte, []byte, error) {
	if log == nil {
		log = slog.Default()
	}
	return func(dnsNames []string, ips []net.IP) ([]byte, []byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ca, err := pki.ParseCertPEM(caPEM)
		if err != nil {
			return nil, nil, err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("reading the node's addresses: %w", err)
		}
		dnsNames, ips = NodeSANs(node, dnsNames, ips)
		if len(dnsNames) == 0 && len(ips) == 0 {
			return nil, nil, fmt.Errorf("none of the serving certificate's names is the node's name or address")
		}
		dir := filepath.Join(dataDir, "pki")
		// A serving certificate comes from the kubelet-serving CA, which
		// the node does not know (only the API server trusts it); one
		// the cluster CA signed is from a server that did not have it
		// yet, and that server's API no longer accepts it: ask anew.
		if certPEM, keyPEM, ok := kept(dir, servingCertFile, servingKeyFile, func(c *x509.Certificate) bool {
			return !signedBy(c, ca) && sameNames(c.DNSNames, dnsNames) && sameIPs(c.IPAddresses, ips)
		}); ok {
			return certPEM, keyPEM, nil
		}
		log.Info("asking for a serving certificate", "dnsNames", dnsNames, "ips", ips)
		certPEM, keyPEM, err := requestCertificate(ctx, cs, 0, certificatesv1.KubeletServingSignerName,
			&x509.CertificateRequest{Subject: pkix.Name{CommonName: NodeUserPrefix + nodeName, Organization: []string{NodesGroup}},
				DNSNames: dnsNames, IPAddresses: ips},
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth})
		if err != nil {
			return nil, nil, fmt.Errorf("serving certificate: %w", err)
		}
		return certPEM, keyPEM, keep(dir, servingCertFile, servingKeyFile, certPEM, keyPEM)
	}
}

// NodeSANs keeps of the requested SANs those that are node's name or
// addresses, as the CSR approver requires.
func NodeSANs(node *corev1.Node, dnsNames []string, ips []net.IP) ([]string, []net.IP) {
	names, addrs := certificates.NodeAddresses(node)
	var outNames []string
	for _, n := range dnsNames {
		if names[strings.ToLower(n)] && !slices.Contains(outNames, n) {
			outNames = append(outNames, n)
		}
	}
	var outIPs []net.IP
	for _, ip := range ips {
		if slices.ContainsFunc(addrs, ip.Equal) && !slices.ContainsFunc(outIPs, ip.Equal) {
			outIPs = append(outIPs, ip)
		}
	}
	return outNames, outIPs
}

// requestCertificate makes a key, asks for tmpl to be signed by signer
// through a CSR, and waits for the certificate.
func requestCertificate(ctx context.Context, cs kubernetes.Interface, timeout time.Duration, signer string,
	tmpl *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (certPEM, keyPEM []byte, err error) {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     usages,
		},
	}
	api := cs.CertificatesV1().CertificateSigningRequests()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	created, err := api.Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the certificate signing request: %w", err)
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		got, err := api.Get(ctx, created.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil, fmt.Errorf("certificate signing request %s was deleted", created.Name)
		case err != nil && ctx.Err() == nil:
			// transient: try again
		case err == nil:
			for _, c := range got.Status.Conditions {
				if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
					return nil, nil, fmt.Errorf("certificate signing request %s: %s: %s %s", created.Name, c.Type, c.Reason, c.Message)
				}
			}
			if len(got.Status.Certificate) > 0 {
				cert, err := pki.ParseCertPEM(got.Status.Certificate)
				if err != nil {
					return nil, nil, fmt.Errorf("certificate of %s: %w", created.Name, err)
				}
				if !publicKeyMatches(cert, key) {
					return nil, nil, fmt.Errorf("certificate of %s is not for the key asked with", created.Name)
				}
				return got.Status.Certificate, keyPEM, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("certificate signing request %s was not signed in %s (is the controller manager running with the cluster CA, and for a serving certificate the kubelet-serving CA? `kubectl certificate approve %s` approves it by hand)", created.Name, timeout, created.Name)
		case <-t.C:
		}
	}
}

func publicKeyMatches(c *x509.Certificate, key *ecdsa.PrivateKey) bool {
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	return ok && pub.Equal(&key.PublicKey)
}

// kept returns the certificate and key in dir if they are a pair that is
// valid for minRemaining more and ok accepts.
func kept(dir, certFile, keyFile string, ok func(*x509.Certificate) bool) ([]byte, []byte, bool) {
	certPEM, err1 := os.ReadFile(filepath.Join(dir, certFile))
	keyPEM, err2 := os.ReadFile(filepath.Join(dir, keyFile))
	if err1 != nil || err2 != nil {
		return nil, nil, false
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, false
	}
	c, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || time.Until(c.NotAfter) < minRemaining || !ok(c) {
		return nil, nil, false
	}
	return certPEM, keyPEM, true
}

// signedBy reports whether c chains to ca.
func signedBy(c, ca *x509.Certificate) bool {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}

func keep(dir, certFile, keyFile string, certPEM, keyPEM []byte) error {
	if err := writeFile(filepath.Join(dir, keyFile), keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, certFile), certPEM, 0o644)
}

// writeFile replaces path atomically.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !slices.ContainsFunc(a, func(y string) bool { return strings.EqualFold(x, y) }) {
			return false
		}
	}
	return true
}

func sameIPs(a, b []net.IP) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !slices.ContainsFunc(a, x.Equal) {
			return false
		}
	}
	return true
}
