package pki

import (
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ParseCA parses a CA certificate and its key (PEM) into a signer pair, as
// upstream's controller manager loads --cluster-signing-cert-file and
// --cluster-signing-key-file.
func ParseCA(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: CA: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("pki: CA key is not a signer")
	}
	cert, err := leaf(pair)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: CA: %w", err)
	}
	if !cert.IsCA {
		return nil, nil, errors.New("pki: the certificate is not a CA certificate")
	}
	return cert, signer, nil
}

// CertHash is kubeadm's CA pin of a certificate: "sha256:" and the hex
// SHA-256 of its DER SubjectPublicKeyInfo.
func CertHash(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckCertHash reports whether c matches pin ("sha256:<hex>", case
// insensitive); any other format is an error.
func CheckCertHash(c *x509.Certificate, pin string) error {
	hexPart, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(pin)), "sha256:")
	if !ok || len(hexPart) != 64 {
		return fmt.Errorf("CA certificate hash %q is not of the form sha256:<64 hex digits>", pin)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return fmt.Errorf("CA certificate hash %q: %w", pin, err)
	}
	if got := CertHash(c); got != "sha256:"+hexPart {
		return fmt.Errorf("the cluster CA's public key hash is %s, not the %s given", got, pin)
	}
	return nil
}

// ParseCertPEM parses the first PEM block of data as a certificate.
func ParseCertPEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// ReadKeyFile reads a PEM private key (PKCS#8, SEC 1 or PKCS#1) from path,
// such as an externally made service-account signing key.
func ReadKeyFile(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	key, err := decodeKey(data)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", path, err)
	}
	return key, nil
}
