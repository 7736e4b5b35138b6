package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/printers"
	"plainkube.dev/plainkube/internal/registry"
)

// componentProbeTimeout bounds one look at a component (upstream's probe
// timeout).
const componentProbeTimeout = 20 * time.Second

var componentStatusKind = corev1.SchemeGroupVersion.WithKind("ComponentStatus")

// componentStatuses is /api/v1/componentstatuses: not stored, each get or
// list looks at the components the server was given (registry.API's
// Components) at that moment, as upstream's does.
func componentStatuses() registry.Resource {
	return registry.Resource{
		Kind:       componentStatusKind,
		Plural:     "componentstatuses",
		Singular:   "componentstatus",
		ShortNames: []string{"cs"},
		Verbs:      []string{"get", "list"},
		Deprecated: "v1 ComponentStatus is deprecated in v1.19+",
		Ephemeral:  true,
		Handler:    &registry.Handler{Serve: serveComponentStatuses},
	}
}

func serveComponentStatuses(rq *registry.Request) error {
	gr := rq.Resource.GroupResource()
	switch {
	case rq.Subresource != "" || rq.Namespace != "":
		return apierrors.NewNotFound(gr, rq.Name)
	case rq.Verb != "get" && rq.Verb != "list":
		return apierrors.NewMethodNotSupported(gr, rq.Verb)
	}
	q := rq.R.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	fsel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if !rq.API.WantsTable() {
		if err := rq.API.Negotiate(); err != nil {
			return err
		}
	}
	var checks []registry.ComponentCheck
	for _, c := range rq.API.Components() {
		if rq.Name == "" || c.Name == rq.Name {
			checks = append(checks, c)
		}
	}
	if rq.Name != "" && len(checks) == 0 {
		return apierrors.NewNotFound(gr, rq.Name)
	}
	statuses := probeComponents(rq.R.Context(), rq.API, checks)
	if rq.Name != "" {
		return writeComponentStatuses(rq, &statuses[0], statuses)
	}
	list := &corev1.ComponentStatusList{TypeMeta: metav1.TypeMeta{Kind: "ComponentStatusList", APIVersion: "v1"}, Items: []corev1.ComponentStatus{}} //nolint:staticcheck // still served
	for _, s := range statuses {
		if sel.Matches(labels.Set(s.Labels)) && fsel.Matches(fields.Set{"metadata.name": s.Name, "metadata.namespace": ""}) {
			list.Items = append(list.Items, s)
		}
	}
	return writeComponentStatuses(rq, list, list.Items)
}

// probeComponents looks at every component at once and returns their
// statuses sorted by name.
func probeComponents(ctx context.Context, api registry.API, checks []registry.ComponentCheck) []corev1.ComponentStatus { //nolint:staticcheck // still served
	ctx, cancel := context.WithTimeout(ctx, componentProbeTimeout)
	defer cancel()
	out := make([]corev1.ComponentStatus, len(checks)) //nolint:staticcheck // still served
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			status, msg, err := c.Probe(ctx, api)
			cond := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: status, Message: msg}
			if err != nil {
				cond.Error = err.Error()
			}
			out[i] = corev1.ComponentStatus{ //nolint:staticcheck // still served
				TypeMeta:   metav1.TypeMeta{Kind: componentStatusKind.Kind, APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Name: c.Name},
				Conditions: []corev1.ComponentCondition{cond},
			}
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// writeComponentStatuses writes obj, or its Table when one was asked for
// (the rows are items).
func writeComponentStatuses(rq *registry.Request, obj runtime.Object, items []corev1.ComponentStatus) error { //nolint:staticcheck // still served
	if !rq.API.WantsTable() {
		rq.API.WriteObject(http.StatusOK, obj)
		return nil
	}
	spec := printers.For(componentStatusKind)
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ColumnDefinitions: spec.Columns, Rows: []metav1.TableRow{}}
	for i := range items {
		row := metav1.TableRow{Cells: spec.Cells(&items[i])}
		var buf bytes.Buffer
		meta := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: items[i].ObjectMeta}
		if err := json.NewEncoder(&buf).Encode(meta); err != nil {
			return err
		}
		row.Object.Raw = bytes.TrimSpace(buf.Bytes())
		table.Rows = append(table.Rows, row)
	}
	rq.W.Header().Set("Content-Type", "application/json")
	rq.W.WriteHeader(http.StatusOK)
	return json.NewEncoder(rq.W).Encode(table)
}

// LeaseProbe reports a component as healthy while it holds and renews its
// leader-election Lease namespace/name (kube-system/kube-scheduler,
// kube-system/kube-controller-manager): what every instance of it keeps,
// wherever it runs, read through the API like anything else. A Lease that
// is missing, unheld or not renewed within its duration is an unhealthy
// component, with the reason as the error.
func LeaseProbe(namespace, name string) func(ctx context.Context, api registry.API) (corev1.ConditionStatus, string, error) {
	return func(ctx context.Context, api registry.API) (corev1.ConditionStatus, string, error) {
		obj, err := api.Get(ctx, coordinationv1.SchemeGroupVersion.WithResource("leases"), namespace, name)
		if apierrors.IsNotFound(err) {
			return corev1.ConditionFalse, "", fmt.Errorf("no leader: Lease %s/%s not found", namespace, name)
		}
		if err != nil {
			return corev1.ConditionUnknown, "", err
		}
		return leaseHealth(obj.(*coordinationv1.Lease), api.Now())
	}
}

func leaseHealth(l *coordinationv1.Lease, now time.Time) (corev1.ConditionStatus, string, error) {
	ref := l.Namespace + "/" + l.Name
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" {
		return corev1.ConditionFalse, "", fmt.Errorf("no leader: Lease %s has no holder", ref)
	}
	if s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return corev1.ConditionFalse, "", fmt.Errorf("leader %s has not renewed Lease %s", *s.HolderIdentity, ref)
	}
	if expiry := s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second); now.After(expiry) {
		return corev1.ConditionFalse, "", fmt.Errorf("leader %s last renewed Lease %s at %s, longer ago than its duration of %ds",
			*s.HolderIdentity, ref, s.RenewTime.UTC().Format(time.RFC3339), *s.LeaseDurationSeconds)
	}
	return corev1.ConditionTrue, "ok", nil
}
