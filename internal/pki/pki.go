package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File names under the PKI directory.
const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"
	// The kubelet-serving CA signs node agents' serving certificates only
	// (upstream's --cluster-signing-kubelet-serving-cert-file/key-file).
	kubeletServingCACertFile = "kubelet-serving-ca.crt"
	kubeletServingCAKeyFile  = "kubelet-serving-ca.key"
	// The front-proxy CA signs the API server's front-proxy client
	// certificate only: aggregated API servers trust it (and nothing else)
	// for the X-Remote-* headers naming the user it proxies for.
	frontProxyCACertFile     = "front-proxy-ca.crt"
	frontProxyCAKeyFile      = "front-proxy-ca.key"
	frontProxyClientCertFile = "front-proxy-client.crt"
	frontProxyClientKeyFile  = "front-proxy-client.key"
	servingCertFile          = "apiserver.crt"
	servingKeyFile           = "apiserver.key"
	adminCertFile            = "admin.crt"
	adminKeyFile             = "admin.key"
	saKeyFile                = "sa.key"
	saPubFile                = "sa.pub"
)

// Names in the issued certificates.
const (
	CACommonName = "plainkube-ca"
	// KubeletServingCACommonName names the kubelet-serving CA.
	KubeletServingCACommonName = "plainkube-kubelet-serving-ca"
	ServingCommonName          = "kube-apiserver"
	// FrontProxyCACommonName names the front-proxy CA; FrontProxyClientName
	// is its one client certificate's CN (upstream's
	// requestheader-allowed-names).
	FrontProxyCACommonName = "plainkube-front-proxy-ca"
	FrontProxyClientName   = "front-proxy-client"
	AdminUser              = "kubernetes-admin"
	AdminGroup             = "system:masters"
)

// Validity periods. Leaf certificates with less than RenewBefore left are
// re-issued by LoadOrCreate.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 365 * 24 * time.Hour
	RenewBefore  = 30 * 24 * time.Hour
)

// Bundle is the cluster's PKI as stored under DIR/pki.
type Bundle struct {
	CACert *x509.Certificate
	CAKey  crypto.Signer
	CAPEM  []byte

	// The kubelet-serving CA (certificate, key, certificate PEM) signs the
	// node agents' serving certificates (the kubernetes.io/kubelet-serving
	// signer) and nothing else. Only the API
	// server trusts it, for its connections to node agents; clients of
	// the API server (kubeconfigs, kube-root-ca.crt, cluster-info) trust
	// CACert alone, so a certificate a node can obtain never verifies as
	// the API server's.
	KubeletServingCACert *x509.Certificate
	KubeletServingCAKey  crypto.Signer
	KubeletServingCAPEM  []byte

	// The front-proxy CA (certificate, key, PEM) and the client
	// certificate and key (PEM) it signed, which the API server presents to
	// aggregated API servers (upstream's --requestheader-client-ca-file and
	// --proxy-client-cert-file/--proxy-client-key-file).
	FrontProxyCACert                                *x509.Certificate
	FrontProxyCAKey                                 crypto.Signer
	FrontProxyCAPEM                                 []byte
	FrontProxyClientCertPEM, FrontProxyClientKeyPEM []byte

	// The API server's serving certificate and key (PEM).
	ServingCertPEM, ServingKeyPEM []byte
	// The admin client certificate (CN=kubernetes-admin, O=system:masters) and key (PEM).
	AdminCertPEM, AdminKeyPEM []byte

	// ServiceAccountKey signs service-account JWTs (ECDSA or RSA). It is
	// stored as sa.key, its public half as sa.pub.
	ServiceAccountKey crypto.Signer

	now func() time.Time // nil: time.Now
}

// Options tune LoadOrCreate.
type Options struct {
	// ExtraIPs and ExtraDNSNames are added to the serving certificate's
	// SANs, e.g. the first service IP (10.96.0.1).
	ExtraIPs      []net.IP
	ExtraDNSNames []string
	// Now is the clock used for issuing and checking certificates (nil: time.Now).
	Now func() time.Time
}

// Seams for tests.
var (
	hostname       = os.Hostname
	interfaceAddrs = net.InterfaceAddrs
)

// LoadOrCreate loads dir/{ca.crt,ca.key,kubelet-serving-ca.crt,
// kubelet-serving-ca.key,front-proxy-ca.crt,front-proxy-ca.key,
// front-proxy-client.crt,front-proxy-client.key,apiserver.crt,
// apiserver.key,admin.crt,admin.key,sa.key,sa.pub} and creates what is
// missing (a directory made before the kubelet-serving or front-proxy CA
// existed gets one at its next start).
//
// The serving certificate's SANs are DNS localhost, kubernetes,
// kubernetes.default, kubernetes.default.svc,
// kubernetes.default.svc.cluster.local and the hostname; IPs 127.0.0.1, ::1,
// every non-loopback, non-link-local address of the host's interfaces, and
// opts.ExtraIPs and opts.ExtraDNSNames. A leaf certificate on disk is
// re-issued (by the same CA) when it does not match its key, does not chain
// to the CA, expires within RenewBefore, has the wrong subject, or (serving
// certificate) lacks a requested SAN. sa.pub is rewritten from sa.key when
// missing or stale.
//
// If only one of a CA's certificate and key exists, or the CA has expired,
// LoadOrCreate fails rather than replace the CA. Keys are written 0600,
// certificates 0644, and dir is made 0700.
func LoadOrCreate(dir string, opts Options) (*Bundle, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	b := &Bundle{now: now}
	var err error
	if b.CACert, b.CAKey, b.CAPEM, err = loadOrCreateCA(dir, caCertFile, caKeyFile, CACommonName, b.clock()); err != nil {
		return nil, err
	}
	if b.KubeletServingCACert, b.KubeletServingCAKey, b.KubeletServingCAPEM, err = loadOrCreateCA(dir,
		kubeletServingCACertFile, kubeletServingCAKeyFile, KubeletServingCACommonName, b.clock()); err != nil {
		return nil, err
	}

	if b.FrontProxyCACert, b.FrontProxyCAKey, b.FrontProxyCAPEM, err = loadOrCreateCA(dir,
		frontProxyCACertFile, frontProxyCAKeyFile, FrontProxyCACommonName, b.clock()); err != nil {
		return nil, err
	}
	b.FrontProxyClientCertPEM, b.FrontProxyClientKeyPEM, err = b.loadOrIssueLeafWith(b.FrontProxyCACert, dir, frontProxyClientCertFile, frontProxyClientKeyFile,
		func(c *x509.Certificate) bool { return c.Subject.CommonName == FrontProxyClientName },
		func() ([]byte, []byte, error) {
			return b.issueWith(b.FrontProxyCACert, b.FrontProxyCAKey, &x509.Certificate{
				Subject:     pkix.Name{CommonName: FrontProxyClientName},
				KeyUsage:    x509.KeyUsageDigitalSignature,
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
		})
	if err != nil {
		return nil, err
	}

	dnsNames, ips, err := servingSANs(opts)
	if err != nil {
		return nil, err
	}
	b.ServingCertPEM, b.ServingKeyPEM, err = b.loadOrIssueLeaf(dir, servingCertFile, servingKeyFile,
		func(c *x509.Certificate) bool { return hasSANs(c, dnsNames, ips) },
		func() ([]byte, []byte, error) { return b.issueServing(ServingCommonName, dnsNames, ips) })
	if err != nil {
		return nil, err
	}

	b.AdminCertPEM, b.AdminKeyPEM, err = b.loadOrIssueLeaf(dir, adminCertFile, adminKeyFile,
		func(c *x509.Certificate) bool {
			return c.Subject.CommonName == AdminUser && slices.Contains(c.Subject.Organization, AdminGroup)
		},
		func() ([]byte, []byte, error) { return b.IssueClientCert(AdminUser, []string{AdminGroup}) })
	if err != nil {
		return nil, err
	}

	if b.ServiceAccountKey, err = loadOrCreateSAKey(dir); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Bundle) clock() time.Time {
	if b.now == nil {
		return time.Now()
	}
	return b.now()
}

// loadOrCreateCA loads the CA in dir/certFile and dir/keyFile, creating
// a new one named cn when neither file exists.
func loadOrCreateCA(dir, certFile, keyFile, cn string, now time.Time) (*x509.Certificate, crypto.Signer, []byte, error) {
	certPEM, certErr := os.ReadFile(filepath.Join(dir, certFile))
	keyPEM, keyErr := os.ReadFile(filepath.Join(dir, keyFile))
	switch {
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		var err error
		if certPEM, keyPEM, err = newCA(cn, now); err != nil {
			return nil, nil, nil, err
		}
		if err := writeFile(filepath.Join(dir, keyFile), keyPEM, 0o600); err != nil {
			return nil, nil, nil, err
		}
		if err := writeFile(filepath.Join(dir, certFile), certPEM, 0o644); err != nil {
			return nil, nil, nil, err
		}
	case certErr != nil:
		return nil, nil, nil, fmt.Errorf("pki: %s: %w", certFile, certErr)
	case keyErr != nil:
		return nil, nil, nil, fmt.Errorf("pki: %s: %w", keyFile, keyErr)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pki: CA %s in %s: %w", certFile, dir, err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, nil, fmt.Errorf("pki: CA key %s in %s is not a signer", keyFile, dir)
	}
	ca, err := leaf(pair)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pki: CA %s in %s: %w", certFile, dir, err)
	}
	if !ca.IsCA {
		return nil, nil, nil, fmt.Errorf("pki: %s is not a CA certificate", filepath.Join(dir, certFile))
	}
	if now.After(ca.NotAfter) {
		return nil, nil, nil, fmt.Errorf("pki: CA %s in %s expired at %s; remove the directory to start a new cluster PKI", certFile, dir, ca.NotAfter.Format(time.RFC3339))
	}
	return ca, signer, certPEM, nil
}

// loadOrIssueLeaf returns the certificate and key in certFile/keyFile if they
// are a valid pair issued by the CA for at least RenewBefore more and ok
// accepts the certificate; otherwise it issues new ones and writes them.
func (b *Bundle) loadOrIssueLeaf(dir, certFile, keyFile string, ok func(*x509.Certificate) bool, issue func() ([]byte, []byte, error)) ([]byte, []byte, error) {
	return b.loadOrIssueLeafWith(b.CACert, dir, certFile, keyFile, ok, issue)
}

// loadOrIssueLeafWith is loadOrIssueLeaf for a certificate signed by ca.
func (b *Bundle) loadOrIssueLeafWith(ca *x509.Certificate, dir, certFile, keyFile string, ok func(*x509.Certificate) bool, issue func() ([]byte, []byte, error)) ([]byte, []byte, error) {
	certPath, keyPath := filepath.Join(dir, certFile), filepath.Join(dir, keyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	for _, err := range []error{certErr, keyErr} {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("pki: %w", err)
		}
	}
	if certErr == nil && keyErr == nil && b.usable(ca, certPEM, keyPEM, ok) {
		return certPEM, keyPEM, nil
	}
	certPEM, keyPEM, err := issue()
	if err != nil {
		return nil, nil, err
	}
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := writeFile(certPath, certPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// usable reports whether certPEM/keyPEM is a matching pair, signed by the
// CA, valid now and for RenewBefore more, and accepted by ok.
func (b *Bundle) usable(ca *x509.Certificate, certPEM, keyPEM []byte, ok func(*x509.Certificate) bool) bool {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false
	}
	c, err := leaf(pair)
	if err != nil {
		return false
	}
	now := b.clock()
	if c.NotAfter.Sub(now) < RenewBefore {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := c.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}); err != nil {
		return false
	}
	return ok(c)
}

// servingSANs returns the API server's SANs for opts, deduplicated, in a
// stable order.
func servingSANs(opts Options) ([]string, []net.IP, error) {
	dnsNames := []string{
		"localhost",
		"kubernetes",
		"kubernetes.default",
		"kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local",
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	if h, err := hostname(); err == nil && h != "" {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dnsNames = append(dnsNames, strings.ToLower(h))
		}
	}
	addrs, err := interfaceAddrs()
	if err != nil {
		return nil, nil, fmt.Errorf("pki: listing interface addresses: %w", err)
	}
	for _, a := range addrs {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		}
		// Link-local addresses are skipped: IPv6 ones are unusable in a URL
		// without a zone, and none are stable host identities.
		if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
			continue
		}
		ips = append(ips, ip)
	}
	ips = append(ips, opts.ExtraIPs...)
	for _, n := range opts.ExtraDNSNames {
		dnsNames = append(dnsNames, strings.ToLower(n))
	}
	return dedupNames(dnsNames), dedupIPs(ips), nil
}

func dedupNames(names []string) []string {
	var out []string
	for _, n := range names {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func dedupIPs(ips []net.IP) []net.IP {
	var out []net.IP
	for _, ip := range ips {
		if ip != nil && !slices.ContainsFunc(out, ip.Equal) {
			out = append(out, ip)
		}
	}
	return out
}

// hasSANs reports whether c covers every DNS name and IP given.
func hasSANs(c *x509.Certificate, dnsNames []string, ips []net.IP) bool {
	for _, n := range dnsNames {
		if !slices.ContainsFunc(c.DNSNames, func(s string) bool { return strings.EqualFold(s, n) }) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// writeFile replaces path with data at mode, atomically.
func writeFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}
