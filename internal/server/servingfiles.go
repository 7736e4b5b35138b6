package server

import (
	"crypto/tls"
	"fmt"
	"os"
	"slices"

	"plainkube.dev/plainkube/internal/pki"
)

// servingTLS is the API server's TLS configuration: the cluster CA's
// serving certificate, or Options.ServingCertFile's, and the cluster CA
// plus Options.ClientCAFile's CAs for client certificates.
func servingTLS(bundle *pki.Bundle, opts Options) (*tls.Config, error) {
	cfg, err := bundle.ServerTLSConfig()
	if err != nil {
		return nil, err
	}
	if opts.ServingCertFile != "" || opts.ServingKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.ServingCertFile, opts.ServingKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if opts.ClientCAFile != "" {
		data, err := os.ReadFile(opts.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		if !cfg.ClientCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", opts.ClientCAFile)
		}
	}
	return cfg, nil
}

// kubeconfigCA is what the admin kubeconfig trusts: the cluster CA, and a
// serving certificate given in a file (which the cluster CA did not sign).
func kubeconfigCA(bundle *pki.Bundle, opts Options) ([]byte, error) {
	if opts.ServingCertFile == "" {
		return bundle.CAPEM, nil
	}
	served, err := os.ReadFile(opts.ServingCertFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file: %w", err)
	}
	return append(slices.Clone(bundle.CAPEM), served...), nil
}
