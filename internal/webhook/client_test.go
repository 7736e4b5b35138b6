package webhook

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// serviceServer is an HTTPS server on 127.0.0.1 whose certificate names
// hook.team.svc only; it counts the connections it accepted.
func serviceServer(t *testing.T) (srv *httptest.Server, caPEM []byte, conns *atomic.Int32) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hook.team.svc"}, DNSNames: []string{"hook.team.svc"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int32{}
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"path":"` + r.URL.Path + `","query":"` + r.URL.RawQuery + `"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), conns
}

// TestServiceThroughEndpointSlices: a webhook named by Service is reached
// at the ready endpoint its EndpointSlice gives for the Service's port
// (target port by name), with TLS to <name>.<namespace>.svc, over one
// kept-alive connection.
func TestServiceThroughEndpointSlices(t *testing.T) {
	srv, ca, conns := serviceServer(t)
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var port int32
	for _, c := range portStr {
		port = port*10 + int32(c-'0')
	}
	cs := fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hook"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.50",
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hook-1", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: &port}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"127.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			}},
	)
	f := informers.NewSharedInformerFactory(cs, 0)
	r := NewEndpointResolver(f)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); f.Shutdown() }()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())

	c := NewClients(r)
	cc := ClientConfig{Service: &Service{Namespace: "team", Name: "hook", Path: "/admit"}, CABundle: ca}
	for range 5 {
		out, err := c.Post(ctx, cc, 10*time.Second, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != `{"path":"/admit","query":"timeout=10s"}` {
			t.Fatalf("answer %s", out)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 calls, want 1 kept alive", n)
	}
	_, err := c.Post(ctx, ClientConfig{Service: &Service{Namespace: "team", Name: "missing"}, CABundle: ca}, time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), `Post "https://missing.team.svc:443/?timeout=1s": service "missing" not found`) {
		t.Errorf("a missing service: %v", err)
	}
	_, err = c.Post(ctx, ClientConfig{Service: &Service{Namespace: "team", Name: "hook", Port: 8443}, CABundle: ca}, time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), `no service port 8443 found for service "hook"`) {
		t.Errorf("a missing port: %v", err)
	}
	// The certificate names the Service, not the address dialled.
	_, err = c.Post(ctx, ClientConfig{URL: srv.URL, CABundle: ca}, time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot validate certificate for 127.0.0.1") {
		t.Errorf("by URL: %v", err)
	}
}

func TestResponseErrors(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/status" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"go away","code":403}`))
			return
		}
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c := NewClients(nil)
	_, err := c.Post(context.Background(), ClientConfig{URL: srv.URL + "/status", CABundle: ca}, time.Second, nil)
	if err == nil || err.Error() != "go away" {
		t.Errorf("a Status: %v", err)
	}
	_, err = c.Post(context.Background(), ClientConfig{URL: srv.URL, CABundle: ca}, time.Second, nil)
	if err == nil || err.Error() != `an error on the server ("boom") has prevented the request from succeeding` {
		t.Errorf("a 500: %v", err)
	}
	if _, err := c.Post(context.Background(), ClientConfig{URL: srv.URL, CABundle: []byte("junk")}, time.Second, nil); err == nil {
		t.Error("a caBundle without certificates was accepted")
	}
}
