package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/pki"
)

// wardle is an aggregated API server for the tests: it serves
// wardle.example.com/v1alpha1 flunders over TLS, trusts only the client
// certificates the extension-apiserver-authentication ConfigMap names, and
// records the users the front proxy names.
type wardle struct {
	mu    sync.Mutex
	users []string
	ln    net.Listener
}

func startWardle(t *testing.T, servingCert tls.Certificate, frontProxyCA []byte, allowed []string) *wardle {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(frontProxyCA) {
		t.Fatal("no front-proxy CA")
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{servingCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	w := &wardle{ln: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if cn := r.TLS.PeerCertificates[0].Subject.CommonName; !slices.Contains(allowed, cn) {
			http.Error(rw, "client "+cn+" may not proxy", http.StatusUnauthorized)
			return
		}
		w.mu.Lock()
		w.users = append(w.users, r.Header.Get("X-Remote-User")+"|"+r.Header.Get("X-Remote-Uid")+"|"+
			strings.Join(r.Header.Values("X-Remote-Group"), ",")+"|"+r.Header.Get("X-Remote-Extra-Scopes.example.com"))
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/wardle.example.com/v1alpha1":
			json.NewEncoder(rw).Encode(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "wardle.example.com/v1alpha1", APIResources: []metav1.APIResource{
					{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: []string{"get", "list"}},
					{Name: "flunders/status", Namespaced: true, Kind: "Flunder", Verbs: []string{"get"}},
				}})
		case "/openapi/v3":
			rw.Write([]byte(`{"paths":{"apis/wardle.example.com/v1alpha1":{"serverRelativeURL":"/openapi/v3/apis/wardle.example.com/v1alpha1?hash=W1"}}}`))
		case "/openapi/v3/apis/wardle.example.com/v1alpha1":
			rw.Write([]byte(`{"openapi":"3.0.0","info":{"title":"wardle","version":"v1"},"paths":{},"components":{"schemas":{"com.example.wardle.v1alpha1.Flunder":{"type":"object"}}}}`))
		case "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders":
			rw.Write([]byte(`{"apiVersion":"wardle.example.com/v1alpha1","kind":"FlunderList","metadata":{},"items":[]}`))
		default:
			http.NotFound(rw, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return w
}

func (w *wardle) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.users)
}

// TestAggregation: an APIService naming a Service makes the API server
// proxy its group-version to a ready endpoint — over TLS checked against
// the caBundle, with the front-proxy client certificate and the user in
// X-Remote-* headers — after its own authentication and authorization;
// its Available condition follows the Service, endpoints and discovery
// check; its resources join discovery; built-in group-versions are listed
// as local APIServices.
func TestAggregation(t *testing.T) {
	const endpoint = "10.244.99.7:8443" // never dialled: DialAggregated routes it to loopback
	var mu sync.Mutex
	target := ""
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		to := target
		mu.Unlock()
		if addr != endpoint {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errUnexpectedAddr(addr)}
		}
		return (&net.Dialer{}).DialContext(ctx, network, to)
	}
	s, cfg := startServerWith(t, Options{InMemory: true, DialAggregated: dial})
	cs := clientset(t, cfg)
	agg, err := aggclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	authn, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var allowed []string
	if err := json.Unmarshal([]byte(authn.Data["requestheader-allowed-names"]), &allowed); err != nil {
		t.Fatal(err)
	}
	if authn.Data["requestheader-username-headers"] != `["X-Remote-User"]` || authn.Data["client-ca-file"] != string(s.PKI.CAPEM) {
		t.Errorf("extension-apiserver-authentication: %v", authn.Data)
	}
	// The extension server's serving certificate comes from its own CA.
	theirs, err := pki.LoadOrCreate(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := theirs.IssueServingCert([]string{"wardle-api.aggtest.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	w := startWardle(t, serving, []byte(authn.Data["requestheader-client-ca-file"]), allowed)
	mu.Lock()
	target = w.ln.Addr().String()
	mu.Unlock()

	// Built-in group-versions are local APIServices, and so are the
	// versions of a CustomResourceDefinition while it exists.
	waitAPIService(t, agg, "v1.apps", "True", "Local")
	waitAPIService(t, agg, "v1.", "True", "Local")
	crd, _ := loadCertificatesExample(t)
	createCRD(t, cfg, crd)
	crdAPIService := crd.Spec.Versions[0].Name + "." + crd.Spec.Group
	if a := waitAPIService(t, agg, crdAPIService, "True", "Local"); a.Labels["kube-aggregator.kubernetes.io/automanaged"] != "true" ||
		a.Spec.GroupPriorityMinimum != 1000 || a.Spec.VersionPriority != 100 {
		t.Errorf("a CRD's APIService: %+v", a)
	}
	if err := crdClient(t, cfg).ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := agg.ApiregistrationV1().APIServices().Get(ctx, crdAPIService, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the APIService of a deleted CRD remains: %v", err)
		}
	}

	_, err = agg.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.wrong.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "wardle.example.com", Version: "v1alpha1", GroupPriorityMinimum: 2000, VersionPriority: 200}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must be `spec.version+\".\"+spec.group`") {
		t.Errorf("an APIService misnamed: %v, want 422", err)
	}

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "aggtest"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apiService := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "wardle.example.com", Version: "v1alpha1", GroupPriorityMinimum: 2000, VersionPriority: 200,
			Service:  &apiregistrationv1.ServiceReference{Namespace: "aggtest", Name: "wardle-api"},
			CABundle: theirs.CAPEM}}
	if apiService, err = agg.ApiregistrationV1().APIServices().Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if apiService.Spec.Service.Port == nil || *apiService.Spec.Service.Port != 443 {
		t.Errorf("service port defaulted to %v, want 443", apiService.Spec.Service.Port)
	}
	waitAPIService(t, agg, apiService.Name, "False", "ServiceNotFound")
	flunders := cs.Discovery().RESTClient().Get().AbsPath("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
	if err := flunders.Do(ctx).Error(); statusCode(err) != http.StatusServiceUnavailable {
		t.Errorf("a request while the APIService is not available: %v, want 503", err)
	}

	if _, err := cs.CoreV1().Services("aggtest").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wardle-api"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIService(t, agg, apiService.Name, "False", "EndpointsNotFound")
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "wardle-api-1", Labels: map[string]string{discoveryv1.LabelServiceName: "wardle-api"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.99.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](8443), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("aggtest").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := waitAPIService(t, agg, apiService.Name, "True", "Passed")
	if c := a.Status.Conditions[0]; c.Message != "all checks passed" {
		t.Errorf("available condition %+v", c)
	}

	// A user the API server authorizes reaches the extension server, named
	// in the headers; one it does not is refused before.
	alice := rest.CopyConfig(s.ConfigAs(&auth.User{Name: "alice", UID: "u-1", Groups: []string{"system:masters", "system:authenticated"},
		Extra: map[string][]string{"scopes.example.com": {"read"}}}))
	body, err := clientset(t, alice).Discovery().RESTClient().Get().AbsPath("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders").DoRaw(ctx)
	if err != nil || !strings.Contains(string(body), `"FlunderList"`) {
		t.Fatalf("list flunders through the API server: %v %s", err, body)
	}
	if want := "alice|u-1|system:masters,system:authenticated|read"; !slices.Contains(w.seen(), want) {
		t.Errorf("the extension server saw users %q, want %q among them", w.seen(), want)
	}
	bob := s.ConfigAs(&auth.User{Name: "bob", Groups: []string{"system:authenticated"}})
	err = clientset(t, bob).Discovery().RESTClient().Get().AbsPath("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders").Do(ctx).Error()
	if !apierrors.IsForbidden(err) {
		t.Errorf("bob lists flunders: %v, want 403", err)
	}
	for _, u := range w.seen() {
		if strings.HasPrefix(u, "bob|") {
			t.Errorf("the extension server saw a request of bob's, whom the API server refused")
		}
	}

	// Discovery: the legacy group list and the aggregated document show it.
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range lists {
		if l.GroupVersion == "wardle.example.com/v1alpha1" {
			for _, r := range l.APIResources {
				found = found || r.Name == "flunders" && r.Namespaced
			}
		}
	}
	if !found {
		t.Errorf("discovery lacks wardle.example.com/v1alpha1 flunders")
	}

	// Its OpenAPI v3 document is listed in the server's index and proxied.
	index, err := cs.Discovery().RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
	if err != nil || !strings.Contains(string(index), `"apis/wardle.example.com/v1alpha1":{"serverRelativeURL":"/openapi/v3/apis/wardle.example.com/v1alpha1?hash=W1"}`) {
		t.Errorf("/openapi/v3 index: %v %s", err, index)
	}
	doc, err := cs.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/wardle.example.com/v1alpha1").Param("hash", "W1").DoRaw(ctx)
	if err != nil || !strings.Contains(string(doc), "com.example.wardle.v1alpha1.Flunder") {
		t.Errorf("the aggregated OpenAPI v3 document: %v %s", err, doc)
	}

	// A wrong CA bundle fails the discovery check.
	a, err = agg.ApiregistrationV1().APIServices().Get(ctx, apiService.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Spec.CABundle = s.PKI.CAPEM
	if _, err := agg.ApiregistrationV1().APIServices().Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a = waitAPIService(t, agg, apiService.Name, "False", "FailedDiscoveryCheck")
	if m := a.Status.Conditions[0].Message; !strings.Contains(m, "failing or missing response from https://10.244.99.7:8443/apis/wardle.example.com/v1alpha1") {
		t.Errorf("FailedDiscoveryCheck message %q", m)
	}
	if err := flunders.Do(ctx).Error(); statusCode(err) != http.StatusServiceUnavailable {
		t.Errorf("a request while the APIService is not available: %v, want 503", err)
	}

	// Deleting it removes the route: 404.
	if err := agg.ApiregistrationV1().APIServices().Delete(ctx, apiService.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for err := flunders.Do(ctx).Error(); !apierrors.IsNotFound(err); err = flunders.Do(ctx).Error() {
		if time.Now().After(deadline) {
			t.Fatalf("after deleting the APIService: %v, want 404", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type errUnexpectedAddr string

func (e errUnexpectedAddr) Error() string { return "test dialer: unexpected address " + string(e) }

// waitAPIService waits until the APIService's Available condition has
// status and reason, and returns it.
func waitAPIService(t *testing.T, agg aggclientset.Interface, name, status, reason string) *apiregistrationv1.APIService {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last *apiregistrationv1.APIService
	for time.Now().Before(deadline) {
		a, err := agg.ApiregistrationV1().APIServices().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = a
			for _, c := range a.Status.Conditions {
				if c.Type == apiregistrationv1.Available && string(c.Status) == status && c.Reason == reason {
					return a
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("APIService %s never became Available=%s (%s); last: %+v", name, status, reason, last)
	return nil
}
