package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/auth"
)

// saEnv is a namespace with its "default" service account, on a server
// with the ServiceAccount admission plugin.
type saEnv struct {
	srv   *Server
	cfg   *rest.Config
	admin *kubernetes.Clientset
	ns    string
	sa    *corev1.ServiceAccount
}

func newSAEnv(t *testing.T, ns string) *saEnv {
	t.Helper()
	srv, cfg := startServer(t)
	admin := clientset(t, cfg)
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var sa *corev1.ServiceAccount
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if sa, err = admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the default service account of %s: %v", ns, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &saEnv{srv: srv, cfg: cfg, admin: admin, ns: ns, sa: sa}
}

// clientFor is a client that authenticates with token only.
func (e *saEnv) clientFor(t *testing.T, token string) *kubernetes.Clientset {
	t.Helper()
	cfg := rest.AnonymousClientConfig(e.cfg)
	cfg.BearerToken = token
	return clientset(t, cfg)
}

func (e *saEnv) createToken(t *testing.T, name string, spec authenticationv1.TokenRequestSpec) *authenticationv1.TokenRequest {
	t.Helper()
	tr, err := e.admin.CoreV1().ServiceAccounts(e.ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s: %v", name, err)
	}
	return tr
}

func whoami(t *testing.T, cs *kubernetes.Clientset) (authenticationv1.UserInfo, error) {
	t.Helper()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// tokenClaims decodes a JWT's payload without verifying it.
func tokenClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTokenRequestAndAuthentication(t *testing.T) {
	e := newSAEnv(t, "tokens")
	ctx := context.Background()
	before := time.Now()
	tr := e.createToken(t, "default", authenticationv1.TokenRequestSpec{})
	if tr.Status.Token == "" {
		t.Fatal("no status.token")
	}
	if got := tr.Status.ExpirationTimestamp.Time; got.Before(before.Add(time.Hour-2*time.Second)) || got.After(time.Now().Add(time.Hour+time.Second)) {
		t.Errorf("expirationTimestamp %v, want about an hour from now", got)
	}
	if tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds != 3600 {
		t.Errorf("spec.expirationSeconds %v, want the default 3600", tr.Spec.ExpirationSeconds)
	}
	if !slices.Equal(tr.Spec.Audiences, []string{auth.DefaultServiceAccountIssuer}) {
		t.Errorf("spec.audiences %v, want the API server's", tr.Spec.Audiences)
	}
	c := tokenClaims(t, tr.Status.Token)
	if c["iss"] != auth.DefaultServiceAccountIssuer || c["sub"] != "system:serviceaccount:tokens:default" {
		t.Errorf("iss %v sub %v", c["iss"], c["sub"])
	}
	if aud, _ := c["aud"].([]any); len(aud) != 1 || aud[0] != auth.DefaultServiceAccountIssuer {
		t.Errorf("aud %v", c["aud"])
	}
	if exp, iat := c["exp"].(float64), c["iat"].(float64); exp-iat != 3600 || c["nbf"] != c["iat"] {
		t.Errorf("exp %v iat %v nbf %v", c["exp"], c["iat"], c["nbf"])
	}
	k, _ := c["kubernetes.io"].(map[string]any)
	sa, _ := k["serviceaccount"].(map[string]any)
	if k["namespace"] != "tokens" || sa["name"] != "default" || sa["uid"] != string(e.sa.UID) {
		t.Errorf("kubernetes.io claims %v", k)
	}
	jti, _ := c["jti"].(string)
	if jti == "" {
		t.Error("no jti")
	}

	// The token authenticates; the user is the service account.
	sa1 := e.clientFor(t, tr.Status.Token)
	info, err := whoami(t, sa1)
	if err != nil {
		t.Fatalf("SelfSubjectReview with the token: %v", err)
	}
	if info.Username != "system:serviceaccount:tokens:default" || info.UID != string(e.sa.UID) {
		t.Errorf("user %q uid %q", info.Username, info.UID)
	}
	if want := []string{"system:serviceaccounts", "system:serviceaccounts:tokens", "system:authenticated"}; !slices.Equal(info.Groups, want) {
		t.Errorf("groups %v, want %v", info.Groups, want)
	}
	if got := info.Extra["authentication.kubernetes.io/credential-id"]; len(got) != 1 || got[0] != "JTI="+jti {
		t.Errorf("credential-id %v, want JTI=%s", got, jti)
	}
	// Authorization is unchanged: a service account may not list pods.
	if _, err := sa1.CoreV1().Pods("tokens").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing pods as the service account: %v, want Forbidden", err)
	}
	// A tampered token is refused.
	bad := tr.Status.Token[:len(tr.Status.Token)-4] + "AAAA"
	if _, err := whoami(t, e.clientFor(t, bad)); !apierrors.IsUnauthorized(err) {
		t.Errorf("tampered token: %v, want Unauthorized", err)
	}

	// Audiences: a token for another audience does not authenticate to
	// the API server, but a TokenReview for that audience accepts it.
	other := e.createToken(t, "default", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
	if _, err := whoami(t, e.clientFor(t, other.Status.Token)); !apierrors.IsUnauthorized(err) {
		t.Errorf("token for audience vault against the API server: %v, want Unauthorized", err)
	}
	review := func(token string, auds ...string) authenticationv1.TokenReviewStatus {
		r, err := e.admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenReview: %v", err)
		}
		return r.Status
	}
	if st := review(tr.Status.Token); !st.Authenticated || st.User.Username != "system:serviceaccount:tokens:default" || !slices.Equal(st.Audiences, []string{auth.DefaultServiceAccountIssuer}) {
		t.Errorf("TokenReview of the API token: %+v", st)
	}
	if st := review(other.Status.Token, "vault"); !st.Authenticated || !slices.Equal(st.Audiences, []string{"vault"}) {
		t.Errorf("TokenReview for audience vault: %+v", st)
	}
	if st := review(other.Status.Token); st.Authenticated || !strings.Contains(st.Error, "invalid for the target audiences") {
		t.Errorf("TokenReview of the vault token for the API server: %+v", st)
	}

	// Deleting the service account invalidates its tokens.
	if err := e.admin.CoreV1().ServiceAccounts("tokens").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := review(tr.Status.Token); st.Authenticated {
		t.Errorf("TokenReview after the service account was deleted: %+v", st)
	}
}

func TestTokenRequestErrors(t *testing.T) {
	e := newSAEnv(t, "tokerr")
	ctx := context.Background()
	_, err := e.admin.CoreV1().ServiceAccounts("tokerr").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `serviceaccounts "nobody" not found`) {
		t.Errorf("token of a missing service account: %v, want NotFound", err)
	}
	_, err = e.admin.CoreV1().ServiceAccounts("tokerr").CreateToken(ctx, "default",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes") {
		t.Errorf("60 s token: %v, want Invalid", err)
	}
	if tr := e.createToken(t, "default", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}); tr.Status.Token == "" {
		t.Error("600 s token: no token")
	}
	_, err = e.admin.CoreV1().ServiceAccounts("tokerr").CreateToken(ctx, "default",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "x"}}}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "cannot bind token to object of type /v1, Kind=ConfigMap") {
		t.Errorf("token bound to a ConfigMap: %v, want BadRequest", err)
	}
	_, err = e.admin.CoreV1().ServiceAccounts("tokerr").CreateToken(ctx, "default",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "gone"}}}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("token bound to a missing pod: %v, want NotFound", err)
	}
}

func TestPodBoundToken(t *testing.T) {
	e := newSAEnv(t, "bound")
	ctx := context.Background()
	pod, err := e.admin.CoreV1().Pods("bound").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.admin.CoreV1().ServiceAccounts("bound").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "not-the-uid"}}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) {
		t.Errorf("token bound to a pod with a wrong UID: %v, want Conflict", err)
	}
	tr := e.createToken(t, "default", authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: pod.UID}})
	k, _ := tokenClaims(t, tr.Status.Token)["kubernetes.io"].(map[string]any)
	if p, _ := k["pod"].(map[string]any); p["name"] != "p" || p["uid"] != string(pod.UID) {
		t.Errorf("pod claim %v", k["pod"])
	}
	info, err := whoami(t, e.clientFor(t, tr.Status.Token))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Extra["authentication.kubernetes.io/pod-name"]; !slices.Equal(got, []string{"p"}) {
		t.Errorf("pod-name %v", got)
	}
	if got := info.Extra["authentication.kubernetes.io/pod-uid"]; !slices.Equal(got, []string{string(pod.UID)}) {
		t.Errorf("pod-uid %v", got)
	}

	// What the admission plugin mounts (3607 s, for the API server) is
	// issued for a year, with warnafter at 3607 s; status says 3607 s.
	mounted := e.createToken(t, "default", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607),
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}})
	c := tokenClaims(t, mounted.Status.Token)
	mk, _ := c["kubernetes.io"].(map[string]any)
	if exp, iat := c["exp"].(float64), c["iat"].(float64); exp-iat != auth.ExpirationExtensionSeconds || mk["warnafter"] != iat+3607 {
		t.Errorf("extended token: exp-iat %v, warnafter %v", exp-iat, mk["warnafter"])
	}
	if d := time.Until(mounted.Status.ExpirationTimestamp.Time); d > time.Hour+8*time.Second {
		t.Errorf("status.expirationTimestamp %v from now, want the 3607 s asked for", d)
	}

	// Deleting the pod invalidates the token.
	if err := e.admin.CoreV1().Pods("bound").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, e.clientFor(t, tr.Status.Token)); !apierrors.IsUnauthorized(err) {
		t.Errorf("token of a deleted pod: %v, want Unauthorized", err)
	}
	// A token bound to a secret lives as long as the secret.
	secret, err := e.admin.CoreV1().Secrets("bound").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := e.createToken(t, "default", authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s", UID: secret.UID}})
	if _, err := whoami(t, e.clientFor(t, st.Status.Token)); err != nil {
		t.Errorf("secret-bound token: %v", err)
	}
	if err := e.admin.CoreV1().Secrets("bound").Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, e.clientFor(t, st.Status.Token)); !apierrors.IsUnauthorized(err) {
		t.Errorf("token of a deleted secret: %v, want Unauthorized", err)
	}
	// A pod of another service account cannot bind this one's token.
	if _, err := e.admin.CoreV1().ServiceAccounts("bound").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.CoreV1().Pods("bound").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.PodSpec{ServiceAccountName: "other", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = e.admin.CoreV1().ServiceAccounts("bound").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "q"}}}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("binding default's token to a pod of other: %v, want BadRequest", err)
	}
}

func TestServiceAccountIssuerDiscovery(t *testing.T) {
	e := newSAEnv(t, "oidc")
	tr := e.createToken(t, "default", authenticationv1.TokenRequestSpec{})
	get := func(token, path string) (*http.Response, []byte) {
		t.Helper()
		cfg := rest.AnonymousClientConfig(e.cfg)
		cfg.BearerToken = token
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	if resp, _ := get("", "/openid/v1/jwks"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous jwks: %d, want 403", resp.StatusCode)
	}
	resp, body := get(tr.Status.Token, "/.well-known/openid-configuration")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("openid-configuration: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var doc struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		Algs          []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != auth.DefaultServiceAccountIssuer || doc.JWKSURI != e.srv.URL+"/openid/v1/jwks" ||
		!slices.Equal(doc.ResponseTypes, []string{"id_token"}) || !slices.Equal(doc.SubjectTypes, []string{"public"}) || !slices.Equal(doc.Algs, []string{"ES256"}) {
		t.Errorf("openid-configuration %s", body)
	}
	resp, body = get(tr.Status.Token, "/openid/v1/jwks")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("jwks: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var set struct{ Keys []auth.JSONWebKey }
	if err := json.Unmarshal(body, &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("jwks %s: %v", body, err)
	}
	pub, err := set.Keys[0].PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.VerifyJWT(tr.Status.Token, pub); err != nil {
		t.Errorf("the token does not verify with the published key: %v", err)
	}
	header, _ := base64.RawURLEncoding.DecodeString(strings.Split(tr.Status.Token, ".")[0])
	var h struct{ Alg, Kid string }
	json.Unmarshal(header, &h)
	if h.Alg != "ES256" || h.Kid != set.Keys[0].Kid || h.Kid == "" {
		t.Errorf("token header %s, key id %q", header, set.Keys[0].Kid)
	}
}

func TestDefaultAdmission(t *testing.T) {
	e := newSAEnv(t, "adm")
	ctx := context.Background()
	pods := e.admin.CoreV1().Pods("adm")
	create := func(name string, mod func(*corev1.Pod)) (*corev1.Pod, error) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "a", Image: "busybox"}, {Name: "b", Image: "busybox"}},
		}}
		if mod != nil {
			mod(p)
		}
		return pods.Create(ctx, p, metav1.CreateOptions{})
	}
	p, err := create("injected", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.ServiceAccountName != "default" || p.Spec.DeprecatedServiceAccount != "default" {
		t.Errorf("serviceAccountName %q serviceAccount %q, want default", p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount)
	}
	// DefaultTolerationSeconds runs beside it.
	if tol := p.Spec.Tolerations; len(tol) != 2 || tol[0].Key != corev1.TaintNodeNotReady || tol[1].Key != corev1.TaintNodeUnreachable ||
		tol[1].TolerationSeconds == nil || *tol[1].TolerationSeconds != 300 {
		t.Errorf("tolerations %+v, want not-ready and unreachable for 300 s", tol)
	}
	if len(p.Spec.Volumes) != 1 || !strings.HasPrefix(p.Spec.Volumes[0].Name, "kube-api-access-") || len(p.Spec.Volumes[0].Name) != len("kube-api-access-")+5 {
		t.Fatalf("volumes %+v", p.Spec.Volumes)
	}
	v := p.Spec.Volumes[0]
	src := v.Projected.Sources
	if len(src) != 3 || src[0].ServiceAccountToken == nil || *src[0].ServiceAccountToken.ExpirationSeconds != 3607 || src[0].ServiceAccountToken.Path != "token" ||
		src[1].ConfigMap == nil || src[1].ConfigMap.Name != "kube-root-ca.crt" || src[1].ConfigMap.Items[0].Key != "ca.crt" ||
		src[2].DownwardAPI == nil || src[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("projected sources %+v", src)
	}
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		want := corev1.VolumeMount{Name: v.Name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == want.Name && m.ReadOnly && m.MountPath == want.MountPath
		}) {
			t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
		}
	}

	// automountServiceAccountToken: false on the pod, or on the account.
	p, err = create("no-automount", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(false) })
	if err != nil || len(p.Spec.Volumes) != 0 || len(p.Spec.Containers[0].VolumeMounts) != 0 {
		t.Errorf("automount false on the pod: %v %+v", err, p.Spec.Volumes)
	}
	if _, err := e.admin.CoreV1().ServiceAccounts("adm").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"},
		AutomountServiceAccountToken: ptr.To(false), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err = create("quiet", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" })
	if err != nil || len(p.Spec.Volumes) != 0 || !slices.Equal(p.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
		t.Errorf("automount false on the account: %v volumes %+v pull secrets %+v", err, p.Spec.Volumes, p.Spec.ImagePullSecrets)
	}
	p, err = create("quiet-but-asked", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "quiet"
		p.Spec.AutomountServiceAccountToken = ptr.To(true)
	})
	if err != nil || len(p.Spec.Volumes) != 1 {
		t.Errorf("automount true on the pod wins: %v %+v", err, p.Spec.Volumes)
	}
	// A container that mounts something at the path keeps it.
	p, err = create("own-mount", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.Containers[0].VolumeMounts) != 1 || len(p.Spec.Containers[1].VolumeMounts) != 1 || len(p.Spec.Volumes) != 2 {
		t.Errorf("own mount: volumes %+v, mounts %+v / %+v", p.Spec.Volumes, p.Spec.Containers[0].VolumeMounts, p.Spec.Containers[1].VolumeMounts)
	}
	// A missing service account is refused.
	_, err = create("orphan", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "missing" })
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "orphan" is forbidden: error looking up service account adm/missing: serviceaccount "missing" not found`) {
		t.Errorf("pod of a missing service account: %v", err)
	}
	// Mirror pods are left alone, and may not name a service account.
	p, err = create("mirror", func(p *corev1.Pod) {
		p.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
		p.Spec.NodeName = "n1"
	})
	if err != nil || p.Spec.ServiceAccountName != "" || len(p.Spec.Volumes) != 0 {
		t.Errorf("mirror pod: %v, serviceAccountName %q volumes %+v", err, p.Spec.ServiceAccountName, p.Spec.Volumes)
	}
	_, err = create("mirror-sa", func(p *corev1.Pod) {
		p.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
		p.Spec.NodeName = "n1"
		p.Spec.ServiceAccountName = "default"
	})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a mirror pod may not reference service accounts") {
		t.Errorf("mirror pod naming a service account: %v", err)
	}
}

// TestKubectlCreateTokenAndWhoami: the real kubectl gets a token and is
// told who it is with it.
func TestKubectlCreateTokenAndWhoami(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	e := newSAEnv(t, "kubectl")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	empty := filepath.Join(dir, "empty.kubeconfig")
	if err := errors.Join(os.WriteFile(caFile, e.srv.PKI.CAPEM, 0o600), os.WriteFile(empty, nil, 0o600)); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, args...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECONFIG="+e.srv.KubeconfigPath)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	token := strings.TrimSpace(run("create", "token", "default", "-n", "kubectl", "--duration", "20m"))
	// As a pod would: the server, the CA and the token, no kubeconfig.
	out := run("--kubeconfig", empty, "--server", e.srv.URL, "--certificate-authority", caFile, "--token", token,
		"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if out != "system:serviceaccount:kubectl:default" {
		t.Errorf("kubectl auth whoami --token: %q", out)
	}
}
