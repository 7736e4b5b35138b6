package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// backdate is how far NotBefore is set in the past, to tolerate clock skew.
const backdate = 5 * time.Minute

// ServerTLSConfig returns a tls.Config that serves the serving certificate
// and requests (does not require) a client certificate, verifying it against
// the CA when one is presented. Minimum TLS 1.2. NextProtos is left empty so
// that net/http adds h2 and http/1.1.
func (b *Bundle) ServerTLSConfig() (*tls.Config, error) {
	cert, err := tls.X509KeyPair(b.ServingCertPEM, b.ServingKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(b.CACert)
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// IssueClientCert signs a client certificate (ExtKeyUsage ClientAuth) for
// user as CN and groups as O, valid for LeafValidity, with a new P-256 key.
func (b *Bundle) IssueClientCert(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("pki: client certificate needs a user name")
	}
	return b.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// IssueServingCert signs a serving certificate (ExtKeyUsage ServerAuth) for
// the given SANs with the cluster CA, valid for LeafValidity, with a new
// P-256 key. Its CN is the first DNS name, else the first IP.
func (b *Bundle) IssueServingCert(dnsNames []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	cn, err := servingCN(dnsNames, ips)
	if err != nil {
		return nil, nil, err
	}
	return b.issueServing(cn, dnsNames, ips)
}

// IssueKubeletServingCert is IssueServingCert signed by the kubelet-serving
// CA instead (see Bundle.KubeletServingCACert): a node agent's serving
// certificate, as the kubelet-serving signer issues them.
func (b *Bundle) IssueKubeletServingCert(dnsNames []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	cn, err := servingCN(dnsNames, ips)
	if err != nil {
		return nil, nil, err
	}
	return b.issueWith(b.KubeletServingCACert, b.KubeletServingCAKey, servingTemplate(cn, dnsNames, ips))
}

// servingCN is a serving certificate's CN: the first DNS name, else the
// first IP.
func servingCN(dnsNames []string, ips []net.IP) (string, error) {
	switch {
	case len(dnsNames) > 0:
		return dnsNames[0], nil
	case len(ips) > 0:
		return ips[0].String(), nil
	}
	return "", errors.New("pki: serving certificate needs at least one SAN")
}

func (b *Bundle) issueServing(cn string, dnsNames []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	return b.issue(servingTemplate(cn, dnsNames, ips))
}

func servingTemplate(cn string, dnsNames []string, ips []net.IP) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

// issue signs tmpl with the cluster CA (see issueWith).
func (b *Bundle) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	return b.issueWith(b.CACert, b.CAKey, tmpl)
}

// issueWith fills in serial and validity (capped at the CA's expiry),
// signs tmpl with ca for a new key, and returns both as PEM.
func (b *Bundle) issueWith(ca *x509.Certificate, caKey crypto.Signer, tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	if ca == nil || caKey == nil {
		return nil, nil, errors.New("pki: bundle has no CA")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	if tmpl.SerialNumber, err = randomSerial(); err != nil {
		return nil, nil, err
	}
	now := b.clock()
	tmpl.NotBefore = now.Add(-backdate)
	tmpl.NotAfter = now.Add(LeafValidity)
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: signing certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// newCA returns a self-signed CA certificate (CN cn, valid CAValidity)
// and its key, as PEM.
func newCA(cn string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: creating CA: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// randomSerial returns a random positive 128-bit serial number.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("pki: serial number: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// leaf returns the parsed first certificate of pair.
func leaf(pair tls.Certificate) (*x509.Certificate, error) {
	if pair.Leaf != nil {
		return pair.Leaf, nil
	}
	return x509.ParseCertificate(pair.Certificate[0])
}

// encodeKey returns key as PKCS#8 PEM.
func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// decodeKey parses the first PEM block of data as a PKCS#8, SEC 1 (EC) or
// PKCS#1 (RSA) private key.
func decodeKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM data")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, err
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported key type %T", key)
	}
	return s, nil
}

// encodePublicKey returns pub as PKIX "PUBLIC KEY" PEM.
func encodePublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("pki: encoding public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
