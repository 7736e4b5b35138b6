package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// loadOrCreateSAKey loads dir/sa.key, or creates a P-256 key there, and
// makes sure dir/sa.pub holds its public half. sa.key is the source of
// truth: a stale or missing sa.pub is rewritten.
func loadOrCreateSAKey(dir string) (crypto.Signer, error) {
	keyPath, pubPath := filepath.Join(dir, saKeyFile), filepath.Join(dir, saPubFile)
	var key crypto.Signer
	data, err := os.ReadFile(keyPath)
	switch {
	case err == nil:
		if key, err = decodeKey(data); err != nil {
			return nil, fmt.Errorf("pki: %s: %w", keyPath, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		key = ec
		pemKey, err := encodeKey(key)
		if err != nil {
			return nil, err
		}
		if err := writeFile(keyPath, pemKey, 0o600); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("pki: %w", err)
	}

	pub, err := encodePublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	old, err := os.ReadFile(pubPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if !bytes.Equal(old, pub) {
		if err := writeFile(pubPath, pub, 0o644); err != nil {
			return nil, err
		}
	}
	return key, nil
}
