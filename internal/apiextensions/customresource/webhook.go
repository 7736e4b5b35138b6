package customresource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/uuid"
	"plainkube.dev/plainkube/internal/webhook"
)

// webhookTimeout is upstream's timeout of a conversion webhook call.
const webhookTimeout = 30 * time.Second

// webhookConverter converts objects by sending a ConversionReview to the
// CRD's conversion webhook through the shared webhook client.
type webhookConverter struct {
	group, kind   string
	reviewVersion string // "v1" or "v1beta1"
	clients       *webhook.Clients
	target        webhook.ClientConfig
}

func newWebhookConverter(crd *apiextensionsv1.CustomResourceDefinition, clients *webhook.Clients) (*webhookConverter, error) {
	wh := crd.Spec.Conversion.Webhook
	if wh == nil || wh.ClientConfig == nil {
		return nil, errors.New("webhook conversion needs spec.conversion.webhook.clientConfig")
	}
	c := &webhookConverter{group: crd.Spec.Group, kind: crd.Spec.Names.Kind, clients: clients}
	if c.clients == nil {
		c.clients = webhook.NewClients(nil)
	}
	for _, v := range wh.ConversionReviewVersions {
		if v == "v1" || v == "v1beta1" {
			c.reviewVersion = v
			break
		}
	}
	if c.reviewVersion == "" {
		return nil, errors.New("no supported conversion review versions")
	}
	cc := wh.ClientConfig
	c.target.CABundle = cc.CABundle
	switch {
	case cc.URL != nil:
		c.target.URL = *cc.URL
	case cc.Service != nil:
		svc := &webhook.Service{Namespace: cc.Service.Namespace, Name: cc.Service.Name}
		if cc.Service.Port != nil {
			svc.Port = *cc.Service.Port
		}
		if cc.Service.Path != nil {
			svc.Path = *cc.Service.Path
		}
		c.target.Service = svc
	default:
		return nil, errors.New("the conversion webhook clientConfig names neither url nor service")
	}
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
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	data, err := c.clients.Post(ctx, c.target, webhookTimeout, body)
	if err != nil {
		return nil, err
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
