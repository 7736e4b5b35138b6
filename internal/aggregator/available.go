package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
)

// localAvailable is the condition of every local APIService.
func localAvailable() apiregistrationv1.APIServiceCondition {
	return helper.NewLocalAvailableAPIServiceCondition()
}

// check decides whether the remote APIService a is available, with
// upstream's reasons and messages, and returns what its server answered
// of the group-version's documents.
func (c *Controller) check(ctx context.Context, a *apiregistrationv1.APIService, p *proxy) (apiregistrationv1.APIServiceCondition, backendDocs) {
	ref := a.Spec.Service
	cond := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse, LastTransitionTime: metav1.Now()}
	fail := func(reason, format string, args ...any) (apiregistrationv1.APIServiceCondition, backendDocs) {
		cond.Reason, cond.Message = reason, fmt.Sprintf(format, args...)
		return cond, backendDocs{}
	}
	svc, err := c.services.Services(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return fail("ServiceNotFound", "service/%s in %q is not present", ref.Name, ref.Namespace)
	}
	if err != nil {
		cond.Status = apiregistrationv1.ConditionUnknown
		return fail("ServiceAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, err)
	}
	if svc.Spec.Type == corev1.ServiceTypeClusterIP {
		portName, ok := servicePortName(svc, p.port)
		if !ok {
			return fail("ServicePortError", "service/%s in %q is not listening on port %d", ref.Name, ref.Namespace, p.port)
		}
		eps := c.endpointSlices(ref.Namespace, ref.Name)
		if len(eps) == 0 {
			return fail("EndpointsNotFound", "cannot find endpointslices for service/%s in %q", ref.Name, ref.Namespace)
		}
		if !hasReadyEndpoint(portName, eps) {
			return fail("MissingEndpoints", "endpointslices for service/%s in %q have no addresses with port name %q", ref.Name, ref.Namespace, portName)
		}
	}
	docs, err := c.fetchDiscovery(ctx, p)
	if err != nil {
		return fail("FailedDiscoveryCheck", "%v", err)
	}
	cond.Status, cond.Reason, cond.Message = apiregistrationv1.ConditionTrue, "Passed", "all checks passed"
	return cond, docs
}

func hasReadyEndpoint(portName string, eps []*discoveryv1.EndpointSlice) bool {
	return slices.ContainsFunc(eps, func(s *discoveryv1.EndpointSlice) bool {
		return slices.ContainsFunc(s.Endpoints, func(e discoveryv1.Endpoint) bool {
			return e.Conditions.Ready == nil || *e.Conditions.Ready
		}) && slices.ContainsFunc(s.Ports, func(p discoveryv1.EndpointPort) bool {
			return p.Name != nil && *p.Name == portName && p.Port != nil
		})
	})
}

// backendDocs is what a discovery check read from an aggregated server.
type backendDocs struct {
	resources *metav1.APIResourceList // nil: not readable
	openAPIV3 string                  // its /openapi/v3 URL for the group-version ("": none)
}

// fetchDiscovery reads the group-version's discovery document from one
// endpoint, as system:kube-aggregator in system:masters (a URL every
// aggregated server must serve), and where its OpenAPI v3 document is.
func (c *Controller) fetchDiscovery(ctx context.Context, p *proxy) (backendDocs, error) {
	if p.transportErr != nil {
		return backendDocs{}, p.transportErr
	}
	addr, err := c.resolve(p.namespace, p.name, p.port)
	if err != nil {
		return backendDocs{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := &url.URL{Scheme: "https", Host: addr, Path: p.groupPath}
	body, code, err := p.get(ctx, u)
	if err != nil {
		p.transport.CloseIdleConnections()
		return backendDocs{}, fmt.Errorf("failing or missing response from %v: %w", u, err)
	}
	if code < http.StatusOK || code >= http.StatusMultipleChoices {
		return backendDocs{}, fmt.Errorf("failing or missing response from %v: bad status from %v: %d", u, u, code)
	}
	var docs backendDocs
	list := &metav1.APIResourceList{}
	if json.Unmarshal(body, list) == nil && list.GroupVersion != "" {
		docs.resources = list
	}
	// Its OpenAPI v3 index, if it serves one (optional).
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if body, code, err := p.get(ctx, &url.URL{Scheme: "https", Host: addr, Path: "/openapi/v3"}); err == nil && code == http.StatusOK && json.Unmarshal(body, &index) == nil {
		if ref := index.Paths[strings.TrimPrefix(p.groupPath, "/")].ServerRelativeURL; strings.HasPrefix(ref, "/openapi/v3/"+strings.TrimPrefix(p.groupPath, "/")) {
			docs.openAPIV3 = ref
		}
	}
	return docs, nil
}

// get reads u from the aggregated server as the aggregator.
func (p *proxy) get(ctx context.Context, u *url.URL) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	client := &http.Client{Transport: p.transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return body, resp.StatusCode, err
}

// setAvailable writes cond into a's status unless it says that already.
func (c *Controller) setAvailable(ctx context.Context, a *apiregistrationv1.APIService, cond apiregistrationv1.APIServiceCondition) error {
	next := a.DeepCopy()
	helper.SetAPIServiceCondition(next, cond)
	if equality.Semantic.DeepEqual(a.Status, next.Status) {
		return nil
	}
	_, err := c.client.APIServices().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
