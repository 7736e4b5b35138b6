package customresource

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// webhookTimeout is upstream's timeout of a conversion webhook call.
const webhookTimeout = 30 * time.Second

// webhookConverter converts objects by sending a ConversionReview to the
// CRD's conversion webhook over HTTPS.
type webhookConverter struct {
	group, kind   string
	reviewVersion string // "v1" or "v1beta1"
	client        *http.Client
	target        func(ctx context.Context) (*url.URL, error)
}

func newWebhookConverter(crd *apiextensionsv1.CustomResourceDefinition, resolve func(ctx context.Context, namespace, name string, port int32) (string, error)) (*webhookConverter, error) {
	wh := crd.Spec.Conversion.Webhook
	if wh == nil || wh.ClientConfig == nil {
		return nil, errors.New("webhook conversion needs spec.conversion.webhook.clientConfig")
	}
	c := &webhookConverter{group: crd.Spec.Group, kind: crd.Spec.Names.Kind}
	for _, v := range wh.ConversionReviewVersions {
		if v == "v1" || v == "v1beta1" {
			c.reviewVersion = v
			break
		}
	}
	if c.reviewVersion == "" {
		return nil, errors.New("no supported conversion review versions")
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(wh.ClientConfig.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(wh.ClientConfig.CABundle) {
			return nil, errors.New("the conversion webhook caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	cc := wh.ClientConfig
	switch {
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, fmt.Errorf("conversion webhook url: %w", err)
		}
		c.target = func(context.Context) (*url.URL, error) { return u, nil }
	case cc.Service != nil:
		svc := *cc.Service
		port := int32(443)
		if svc.Port != nil {
			port = *svc.Port
		}
		tlsConfig.ServerName = svc.Name + "." + svc.Namespace + ".svc"
		path := ""
		if svc.Path != nil {
			path = *svc.Path
		}
		c.target = func(ctx context.Context) (*url.URL, error) {
			host := net.JoinHostPort(tlsConfig.ServerName, strconv.Itoa(int(port)))
			if resolve != nil {
				h, err := resolve(ctx, svc.Namespace, svc.Name, port)
				if err != nil {
					return nil, err
				}
				host = h
			}
			return &url.URL{Scheme: "https", Host: host, Path: path}, nil
		}
	default:
		return nil, errors.New("the conversion webhook clientConfig names neither url nor service")
	}
	c.client = &http.Client{Timeout: webhookTimeout, Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: nil}}
	return c, nil
}

// convert sends the objects not yet in version to the webhook and returns
// every object in version. As upstream, the webhook may change labels and
// annotations only: the rest of metadata is restored from the original.
func (c *webhookConverter) convert(ctx context.Context, objs []*unstructured.Unstructured, version string) ([]*unstructured.Unstructured, error) {
	desired := c.group + "/" + version
	gvk := fmt.Sprintf("%s, Kind=%s", desired, c.kind)
	var idx []int
	var raws []runtime.RawExtension
	for i, u := range objs {
		if u.GetAPIVersion() == desired {
			continue
		}
		data, err := json.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		idx = append(idx, i)
		raws = append(raws, runtime.RawExtension{Raw: data})
	}
	out := append([]*unstructured.Unstructured(nil), objs...)
	if len(idx) == 0 {
		return out, nil
	}
	uid := uuid.NewUUID()
	review := &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/" + c.reviewVersion, Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: uid, DesiredAPIVersion: desired, Objects: raws},
	}
	resp, err := c.call(ctx, review)
	if err != nil {
		return nil, fmt.Errorf("conversion webhook for %s failed: %v", gvk, err)
	}
	if resp.Response == nil {
		return nil, fmt.Errorf("conversion webhook for %s failed: no response provided", gvk)
	}
	if resp.Response.UID != uid {
		return nil, fmt.Errorf("conversion webhook for %s failed: expected response.uid=%q, got %q", gvk, uid, resp.Response.UID)
	}
	if resp.Response.Result.Status != metav1.StatusSuccess {
		if resp.Response.Result.Message != "" {
			return nil, fmt.Errorf("conversion webhook for %s failed: %s", gvk, resp.Response.Result.Message)
		}
		return nil, fmt.Errorf("conversion webhook for %s failed: response.result.status was '%s', not 'Success'", gvk, resp.Response.Result.Status)
	}
	converted := resp.Response.ConvertedObjects
	if len(converted) != len(idx) {
		return nil, fmt.Errorf("conversion webhook for %s returned %d objects, expected %d", gvk, len(converted), len(idx))
	}
	for n, raw := range converted {
		var m map[string]interface{}
		if err := utiljson.Unmarshal(raw.Raw, &m); err != nil {
			return nil, fmt.Errorf("conversion webhook for %s returned invalid converted object at index %v: %v", gvk, n, err)
		}
		got := &unstructured.Unstructured{Object: m}
		orig := objs[idx[n]]
		if got.GetAPIVersion() != desired {
			return nil, fmt.Errorf("conversion webhook for %s returned invalid converted object at index %v: invalid groupVersion (expected %v, received %v)", gvk, n, desired, got.GetAPIVersion())
		}
		if got.GetKind() != orig.GetKind() {
			return nil, fmt.Errorf("conversion webhook for %s returned invalid converted object at index %v: invalid kind (expected %v, received %v)", gvk, n, orig.GetKind(), got.GetKind())
		}
		if err := restoreObjectMeta(orig, got); err != nil {
			return nil, fmt.Errorf("conversion webhook for %s returned invalid metadata in object at index %v: %v", gvk, n, err)
		}
		out[idx[n]] = got
	}
	return out, nil
}

func (c *webhookConverter) call(ctx context.Context, review *apiextensionsv1.ConversionReview) (*apiextensionsv1.ConversionReview, error) {
	target, err := c.target(ctx)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the server responded with the status code %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	out := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	if want := "apiextensions.k8s.io/" + c.reviewVersion; out.APIVersion != want || out.Kind != "ConversionReview" {
		return nil, fmt.Errorf("expected webhook response of %s, Kind=ConversionReview, got %s, Kind=%s", want, out.APIVersion, out.Kind)
	}
	return out, nil
}

// restoreObjectMeta keeps the original's metadata in converted, except
// labels and annotations, which the webhook may change.
func restoreObjectMeta(original, converted *unstructured.Unstructured) error {
	respMeta, ok := converted.Object["metadata"].(map[string]interface{})
	if !ok {
		return errors.New("missing metadata in converted object")
	}
	if e, a := original.GetName(), converted.GetName(); e != a {
		return fmt.Errorf("must have the same name: %v != %v", e, a)
	}
	if e, a := original.GetNamespace(), converted.GetNamespace(); e != a {
		return fmt.Errorf("must have the same namespace: %v != %v", e, a)
	}
	if e, a := original.GetUID(), converted.GetUID(); e != a {
		return fmt.Errorf("must have the same UID: %v != %v", e, a)
	}
	meta, _ := runtime.DeepCopyJSONValue(original.Object["metadata"]).(map[string]interface{})
	if meta == nil {
		meta = map[string]interface{}{}
	}
	for _, fld := range []string{"labels", "annotations"} {
		v, found := respMeta[fld]
		if !found || v == nil {
			delete(meta, fld)
			continue
		}
		m, ok := v.(map[string]interface{})
		if !ok {
			return fmt.Errorf("invalid metadata.%s of type %T in converted object", fld, v)
		}
		for k, val := range m {
			if _, ok := val.(string); !ok {
				return fmt.Errorf("metadata.%s[%s] must be a string, but is %T in converted object", fld, k, val)
			}
		}
		meta[fld] = m
	}
	converted.Object["metadata"] = meta
	return nil
}
