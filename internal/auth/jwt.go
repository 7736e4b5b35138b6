package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// This file is a minimal JSON Web Signature (RFC 7515) in compact form, for
// the two algorithms service-account tokens use: ES256 (an ECDSA P-256 key)
// and RS256 (an RSA key).

// jwsHeader is the protected header of a token.
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
}

var b64 = base64.RawURLEncoding

// signingAlgorithm is the JWS algorithm a key signs with.
func signingAlgorithm(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("service-account key: only the P-256 curve is supported, not %s", k.Curve.Params().Name)
		}
		return "ES256", nil
	case *rsa.PublicKey:
		return "RS256", nil
	}
	return "", fmt.Errorf("service-account key: unsupported key type %T", pub)
}

// keyID names a public key as upstream does: the unpadded base64url
// SHA-256 of its PKIX (DER) encoding.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return b64.EncodeToString(sum[:]), nil
}

// signJWT returns the compact serialisation of claims signed by key.
func signJWT(key crypto.Signer, kid string, claims any) (string, error) {
	alg, err := signingAlgorithm(key.Public())
	if err != nil {
		return "", err
	}
	header, err := json.Marshal(jwsHeader{Alg: alg, Kid: kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signingInput := b64.EncodeToString(header) + "." + b64.EncodeToString(payload)
	digest := sha256.Sum256([]byte(signingInput))
	var sig []byte
	switch alg {
	case "ES256":
		ec, ok := key.(*ecdsa.PrivateKey)
		if !ok {
			return "", fmt.Errorf("service-account key: an ECDSA signer must be an *ecdsa.PrivateKey, not %T", key)
		}
		r, s, err := ecdsa.Sign(rand.Reader, ec, digest[:])
		if err != nil {
			return "", err
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case "RS256":
		if sig, err = key.Sign(rand.Reader, digest[:], crypto.SHA256); err != nil {
			return "", err
		}
	}
	return signingInput + "." + b64.EncodeToString(sig), nil
}

// parsedJWT is a token split into its parts, not yet verified.
type parsedJWT struct {
	header       jwsHeader
	payload      []byte
	signingInput string
	signature    []byte
}

// parseJWT splits a compact JWS; ok is false when token is not one.
func parseJWT(token string) (p parsedJWT, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return p, false
	}
	header, err := b64.DecodeString(parts[0])
	if err != nil || json.Unmarshal(header, &p.header) != nil {
		return p, false
	}
	if p.payload, err = b64.DecodeString(parts[1]); err != nil {
		return p, false
	}
	if p.signature, err = b64.DecodeString(parts[2]); err != nil {
		return p, false
	}
	p.signingInput = parts[0] + "." + parts[1]
	return p, true
}

var errBadSignature = errors.New("invalid bearer token: the signature does not verify")

// verify checks the signature against pub.
func (p parsedJWT) verify(pub crypto.PublicKey) error {
	alg, err := signingAlgorithm(pub)
	if err != nil {
		return err
	}
	if p.header.Alg != alg {
		return errBadSignature
	}
	digest := sha256.Sum256([]byte(p.signingInput))
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if len(p.signature) != 64 {
			return errBadSignature
		}
		r, s := new(big.Int).SetBytes(p.signature[:32]), new(big.Int).SetBytes(p.signature[32:])
		if !ecdsa.Verify(k, digest[:], r, s) {
			return errBadSignature
		}
	case *rsa.PublicKey:
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], p.signature) != nil {
			return errBadSignature
		}
	}
	return nil
}

// JSONWebKey is one public key of a JWKS document (RFC 7517), with the
// members upstream publishes.
type JSONWebKey struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv,omitempty"`
	Alg string `json:"alg"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// publicJWK describes pub as a signing key.
func publicJWK(pub crypto.PublicKey) (JSONWebKey, error) {
	alg, err := signingAlgorithm(pub)
	if err != nil {
		return JSONWebKey{}, err
	}
	kid, err := keyID(pub)
	if err != nil {
		return JSONWebKey{}, err
	}
	k := JSONWebKey{Use: "sig", Kid: kid, Alg: alg}
	switch pk := pub.(type) {
	case *ecdsa.PublicKey:
		k.Kty, k.Crv = "EC", "P-256"
		x, y := make([]byte, 32), make([]byte, 32)
		pk.X.FillBytes(x)
		pk.Y.FillBytes(y)
		k.X, k.Y = b64.EncodeToString(x), b64.EncodeToString(y)
	case *rsa.PublicKey:
		k.Kty = "RSA"
		k.N = b64.EncodeToString(pk.N.Bytes())
		k.E = b64.EncodeToString(big.NewInt(int64(pk.E)).Bytes())
	}
	return k, nil
}

// PublicKey is the key k describes (EC P-256 or RSA).
func (k JSONWebKey) PublicKey() (crypto.PublicKey, error) {
	switch k.Kty {
	case "EC":
		if k.Crv != "P-256" {
			return nil, fmt.Errorf("unsupported curve %q", k.Crv)
		}
		x, err1 := b64.DecodeString(k.X)
		y, err2 := b64.DecodeString(k.Y)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}, nil
	case "RSA":
		n, err1 := b64.DecodeString(k.N)
		e, err2 := b64.DecodeString(k.E)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	}
	return nil, fmt.Errorf("unsupported key type %q", k.Kty)
}

// VerifyJWT checks token's signature with pub and returns its payload. It
// checks nothing else (issuer, audience, expiry): it is for tests and
// tools that verify a token against a published JWKS.
func VerifyJWT(token string, pub crypto.PublicKey) ([]byte, error) {
	p, ok := parseJWT(token)
	if !ok {
		return nil, errors.New("not a JSON Web Token")
	}
	if err := p.verify(pub); err != nil {
		return nil, err
	}
	return p.payload, nil
}
