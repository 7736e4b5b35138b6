package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
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
// upstream's reasons and messages, and returns the resource list its
// server answered for the group-version (nil when it did not).
func (c *Controller) check(ctx context.Context, a *apiregistrationv1.APIService, p *proxy) (apiregistrationv1.APIServiceCondition, *metav1.APIResourceList) {
	ref := a.Spec.Service
	cond := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse, LastTransitionTime: metav1.Now()}
	fail := func(reason, format string, args ...any) (apiregistrationv1.APIServiceCondition, *metav1.APIResourceList) {
		cond.Reason, cond.Message = reason, fmt.Sprintf(format, args...)
		return cond, nil
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
	resources, err := c.fetchDiscovery(ctx, p)
	if err != nil {
		return fail("FailedDiscoveryCheck", "%v", err)
	}
	cond.Status, cond.Reason, cond.Message = apiregistrationv1.ConditionTrue, "Passed", "all checks passed"
	return cond, resources
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

// fetchDiscovery reads the group-version's discovery document from one
// endpoint, as system:kube-aggregator in system:masters (a URL every
// aggregated server must serve).
func (c *Controller) fetchDiscovery(ctx context.Context, p *proxy) (*metav1.APIResourceList, error) {
	if p.transportErr != nil {
		return nil, p.transportErr
	}
	addr, err := c.resolve(p.namespace, p.name, p.port)
	if err != nil {
		return nil, err
	}
	u := &url.URL{Scheme: "https", Host: addr, Path: p.groupPath}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	client := &http.Client{Transport: p.transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		p.transport.CloseIdleConnections()
		return nil, fmt.Errorf("failing or missing response from %v: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return nil, fmt.Errorf("failing or missing response from %v: bad status from %v: %d", u, u, resp.StatusCode)
	}
	if err != nil {
		return nil, fmt.Errorf("failing or missing response from %v: %w", u, err)
	}
	list := &metav1.APIResourceList{}
	if json.Unmarshal(body, list) != nil || list.GroupVersion == "" {
		return nil, nil // available, but its resources are not known
	}
	return list, nil
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
