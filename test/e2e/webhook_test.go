package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// webhookCerts makes a CA and a serving certificate for dnsName signed by
// it, as PEM.
func webhookCerts(t *testing.T, dnsName string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e webhook CA"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestAdmissionWebhookInAPod is issue #18's walk-through of a webhook: a
// validating webhook served by a pod behind a Service (its TLS
// certificate from a Secret, the CA in the configuration's caBundle)
// refuses a labelled ConfigMap with its own message, through kubectl.
func TestAdmissionWebhookInAPod(t *testing.T) {
	requireRealNode(t)
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.121.0.0/16")
	t.Cleanup(func() {
		c.run("delete", "validatingwebhookconfiguration", "--all")
		c.run("delete", "deployment", "--all", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildNettool(t, c.dataDir)
	dir := t.TempDir()
	caPEM, certPEM, keyPEM := webhookCerts(t, "labels-webhook.default.svc")
	c.must("create", "secret", "tls", "labels-webhook-tls", "--cert", writeFile(t, dir, "tls.crt", string(certPEM)), "--key", writeFile(t, dir, "tls.key", string(keyPEM)))
	c.must("apply", "-f", writeFile(t, dir, "webhook.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: labels-webhook}
spec:
  replicas: 1
  selector: {matchLabels: {app: labels-webhook}}
  template:
    metadata: {labels: {app: labels-webhook}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: webhook
        image: nettool:e2e
        imagePullPolicy: Never
        command: ["nettool", "webhook", "-port", "8443", "-cert", "/tls/tls.crt", "-key", "/tls/tls.key"]
        ports: [{name: https, containerPort: 8443}]
        readinessProbe: {tcpSocket: {port: 8443}, periodSeconds: 1}
        volumeMounts: [{name: tls, mountPath: /tls, readOnly: true}]
      volumes: [{name: tls, secret: {secretName: labels-webhook-tls}}]
---
apiVersion: v1
kind: Service
metadata: {name: labels-webhook}
spec:
  selector: {app: labels-webhook}
  ports: [{name: https, port: 443, targetPort: https}]
`))
	c.must("rollout", "status", "deployment/labels-webhook", "--timeout=60s")
	c.must("apply", "-f", writeFile(t, dir, "config.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: labels-webhook}
webhooks:
- name: labels.e2e.plainkube.dev
  clientConfig:
    service: {namespace: default, name: labels-webhook, path: /validate}
    caBundle: `+base64.StdEncoding.EncodeToString(caPEM)+`
  rules:
  - {operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  objectSelector: {matchExpressions: [{key: e2e-deny, operator: Exists}]}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 5
`))
	// The configuration is in effect as soon as the server sees it.
	cm := writeFile(t, dir, "cm.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: refused, labels: {e2e-deny: "yes"}}
data: {k: v}
`)
	deadline := time.Now().Add(10 * time.Second)
	var out string
	for {
		var err error
		if out, err = c.run("create", "-f", cm); err != nil {
			break
		}
		c.must("delete", "configmap", "refused")
		if time.Now().After(deadline) {
			t.Fatalf("a configmap labelled e2e-deny=yes is still admitted: %s\nserver log:\n%s", out, c.log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	contains(t, out, `admission webhook "labels.e2e.plainkube.dev" denied the request: nettool webhook refuses refused: it is labelled e2e-deny=yes`)
	c.mustFail("get", "configmap", "refused")
	// Labelling an existing one is an UPDATE the webhook refuses too.
	c.must("create", "configmap", "kept", "--from-literal=k=v")
	out = c.mustFail("label", "configmap", "kept", "e2e-deny=yes")
	contains(t, out, `denied the request: nettool webhook refuses kept`)
	c.must("label", "configmap", "kept", "e2e-deny=no")
}
