package subresources

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/registry"
)

// Eviction serves pods/eviction: a delete of the pod that respects the
// PodDisruptionBudget matching it, as upstream's. A pod that is pending,
// finished or already being deleted is deleted at once. Otherwise the
// budget (at most one may match: more is a 500) must allow a disruption:
// its disruptionsAllowed is decremented and the pod recorded in its
// disruptedPods by a write of its status that loses to any other write
// (retried), or the eviction is refused with 429 TooManyRequests. An
// unready pod may go without spending the budget when the budget's
// unhealthyPodEvictionPolicy is AlwaysAllow, or (IfHealthyBudget, the
// default) while the budget has its desired healthy pods. Before the
// delete the pod gets the DisruptionTarget condition.
var Eviction = registry.Handler{Serve: serveEviction}

var pdbsGVR = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")

// MaxDisruptedPodSize is how many evictions not yet seen by the
// disruption controller a budget may record before evictions under it are
// refused, as upstream's.
const MaxDisruptedPodSize = 2000

// evictionRetries and evictionRetryDelay bound the retries of a write that
// lost a race (upstream's EvictionsRetry: 20 steps of 500ms).
const (
	evictionRetries    = 20
	evictionRetryDelay = 500 * time.Millisecond
)

func serveEviction(rq *registry.Request) error {
	body, err := createBody(rq)
	if err != nil {
		return err
	}
	ev, err := decodeEviction(rq, body)
	if err != nil {
		return err
	}
	if ev.Name != rq.Name {
		return badRequest("name in URL does not match name in Eviction object")
	}
	if o := ev.DeleteOptions; o != nil && o.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *o.IgnoreStoreReadErrorWithClusterBreakingPotential {
		return apierrors.NewInvalid(policyv1.SchemeGroupVersion.WithKind("Eviction").GroupKind(), rq.Name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions").Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option")})
	}
	opts, err := propagateDryRun(ev, rq.R.URL.Query()["dryRun"])
	if err != nil {
		return err
	}
	if err := rq.API.AdmitCreate(ev); err != nil {
		return err
	}
	e := &evictor{rq: rq, ctx: rq.R.Context(), opts: opts}
	if err := e.evict(); err != nil {
		return err
	}
	rq.API.WriteObject(http.StatusCreated, created())
	return nil
}

// decodeEviction reads a policy/v1 Eviction, or a policy/v1beta1 one (the
// same fields), in the request's Content-Type.
func decodeEviction(rq *registry.Request, body []byte) (*policyv1.Eviction, error) {
	obj, err := rq.API.Decode(body, policyv1.SchemeGroupVersion.WithKind("Eviction"), &policyv1.Eviction{})
	if err != nil {
		old, oldErr := rq.API.Decode(body, policyv1beta1.SchemeGroupVersion.WithKind("Eviction"), &policyv1beta1.Eviction{})
		ev, ok := old.(*policyv1beta1.Eviction)
		if oldErr != nil || !ok {
			return nil, err
		}
		return &policyv1.Eviction{ObjectMeta: ev.ObjectMeta, DeleteOptions: ev.DeleteOptions}, nil
	}
	ev, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, badRequest("expected an Eviction body")
	}
	return ev, nil
}

// propagateDryRun makes the request's dryRun and the Eviction's
// DeleteOptions agree: either may set it, and both set must match.
func propagateDryRun(ev *policyv1.Eviction, query []string) (*metav1.DeleteOptions, error) {
	if ev.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: query}, nil
	}
	if len(ev.DeleteOptions.DryRun) == 0 {
		ev.DeleteOptions.DryRun = query
		return ev.DeleteOptions, nil
	}
	if len(query) == 0 {
		return ev.DeleteOptions, nil
	}
	if !reflect.DeepEqual(query, ev.DeleteOptions.DryRun) {
		return nil, apierrors.NewInternalError(fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", query, ev.DeleteOptions.DryRun))
	}
	return ev.DeleteOptions, nil
}

// evictor is one eviction.
type evictor struct {
	rq   *registry.Request
	ctx  context.Context
	opts *metav1.DeleteOptions
}

func (e *evictor) dryRun() bool { return len(e.opts.DryRun) > 0 }

func (e *evictor) pod() (*corev1.Pod, error) {
	obj, err := e.rq.API.Get(e.ctx, corev1.SchemeGroupVersion.WithResource("pods"), e.rq.Namespace, e.rq.Name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

func (e *evictor) evict() error {
	// A pod that no budget guards (pending, finished, being deleted) is
	// deleted at once; a conflict (the pod changed meanwhile) starts over,
	// unless the caller gave a resourceVersion.
	var pod *corev1.Pod
	deleted := false
	err := retryOn(e.ctx, func(err error) bool { return apierrors.IsConflict(err) && rvUnset(e.opts) }, func() error {
		var err error
		if pod, err = e.pod(); err != nil {
			return err
		}
		if !budgetIgnored(pod) {
			return nil
		}
		opts := e.opts
		// A pod still active (pending) could become ready meanwhile: it
		// is deleted only as it was read.
		if podutil.IsActive(pod) && rvUnset(opts) {
			opts = withResourceVersion(opts, pod.ResourceVersion)
		}
		if err := e.markAndDelete(opts); err != nil {
			return err
		}
		deleted = true
		return nil
	})
	if err != nil || deleted {
		return err
	}

	pdbs, err := e.budgets(pod)
	if err != nil {
		return err
	}
	if len(pdbs) > 1 {
		return apierrors.FromObject(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."})
	}
	if len(pdbs) == 0 {
		return e.markAndDelete(e.opts)
	}
	pdb := pdbs[0]
	if !unhealthyLetGo(pod, pdb) {
		if err := e.spend(pod, pdb.DeepCopy()); err != nil {
			return err
		}
		return e.markAndDelete(e.opts)
	}
	// The budget is not spent: the pod is deleted only if it has not
	// become ready since.
	err = e.markAndDelete(withResourceVersion(e.opts, pod.ResourceVersion))
	if apierrors.IsConflict(err) && rvUnset(e.opts) {
		return tooManyRequests(pdb.Name)
	}
	return err
}

// unhealthyLetGo: pod is unready and pdb lets it go without spending a
// disruption, as its unhealthyPodEvictionPolicy says: AlwaysAllow, or
// IfHealthyBudget (the default) while the budget has its desired healthy
// pods.
func unhealthyLetGo(pod *corev1.Pod, pdb *policyv1.PodDisruptionBudget) bool {
	if podutil.IsReady(pod) {
		return false
	}
	p := pdb.Spec.UnhealthyPodEvictionPolicy
	return p != nil && *p == policyv1.AlwaysAllow ||
		pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

// spend takes one disruption from pdb for pod, reading the budget again
// after a write that lost a race.
func (e *evictor) spend(pod *corev1.Pod, pdb *policyv1.PodDisruptionBudget) error {
	refresh := false
	return retryOn(e.ctx, apierrors.IsConflict, func() error {
		if refresh {
			obj, err := e.rq.API.Get(e.ctx, pdbsGVR, pod.Namespace, pdb.Name)
			if err != nil {
				return err
			}
			pdb = obj.(*policyv1.PodDisruptionBudget)
		}
		refresh = true
		return e.checkAndDecrement(pod.Name, pdb)
	})
}

// checkAndDecrement refuses the eviction if pdb allows no disruption, else
// records it in pdb's status (unless a dry run), conditional on pdb's
// resourceVersion.
func (e *evictor) checkAndDecrement(podName string, pdb *policyv1.PodDisruptionBudget) error {
	s := &pdb.Status
	switch {
	case s.ObservedGeneration < pdb.Generation:
		return tooManyRequests(pdb.Name)
	case s.DisruptionsAllowed < 0:
		return forbiddenByBudget(pdb.Name, "pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
	case len(s.DisruptedPods) > MaxDisruptedPodSize:
		return forbiddenByBudget(pdb.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			"too many pending evictions not confirmed by PDB controller")
	case s.DisruptionsAllowed == 0:
		return budgetExhausted(pdb)
	}
	s.DisruptionsAllowed--
	if s.DisruptionsAllowed == 0 {
		apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition,
			Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason, ObservedGeneration: s.ObservedGeneration,
			LastTransitionTime: metav1.NewTime(e.rq.API.Now())})
	}
	if e.dryRun() {
		return nil
	}
	if s.DisruptedPods == nil {
		s.DisruptedPods = map[string]metav1.Time{}
	}
	s.DisruptedPods[podName] = metav1.NewTime(e.rq.API.Now())
	_, err := e.rq.API.UpdateOther(e.ctx, pdbsGVR, "status", pdb.Namespace, pdb.Name, "kube-apiserver", func(runtime.Object) (runtime.Object, error) {
		return pdb.DeepCopy(), nil
	})
	return err
}

// markAndDelete gives the pod the DisruptionTarget condition (but in a dry
// run) and deletes it with opts, whose preconditions both steps check.
func (e *evictor) markAndDelete(opts *metav1.DeleteOptions) error {
	if !e.dryRun() {
		manager, _, _ := strings.Cut(e.rq.R.UserAgent(), "/")
		podGR := schema.GroupResource{Resource: "Pod"}
		updated, err := e.rq.API.Update(manager, func(current runtime.Object) (runtime.Object, error) {
			pod := current.(*corev1.Pod)
			if p := opts.Preconditions; p != nil {
				if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
					return nil, apierrors.NewConflict(podGR, pod.Name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, pod.UID))
				}
				if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
					return nil, apierrors.NewConflict(podGR, pod.Name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, pod.ResourceVersion))
				}
			}
			setDisruptionTarget(pod, e.rq.API.Now())
			// Written over whatever changed meanwhile: the preconditions
			// were checked on what is written over.
			pod.ResourceVersion = ""
			return pod, nil
		})
		if err != nil {
			return err
		}
		if !rvUnset(opts) {
			// The condition moved the pod's resourceVersion on.
			opts = withResourceVersion(opts, updated.(*corev1.Pod).ResourceVersion)
		}
	}
	return e.rq.API.Delete(opts)
}

// setDisruptionTarget sets the pod's DisruptionTarget condition to True
// for the Eviction API; its transition time moves only if it changes.
func setDisruptionTarget(pod *corev1.Pod, now time.Time) {
	c := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second))}
	for i := range pod.Status.Conditions {
		old := &pod.Status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		c.LastProbeTime = old.LastProbeTime
		*old = c
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// budgets are the PodDisruptionBudgets of the pod's namespace whose
// selector matches it (an invalid selector matches nothing).
func (e *evictor) budgets(pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	objs, err := e.rq.API.List(e.ctx, pdbsGVR, pod.Namespace, registry.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for _, o := range objs {
		pdb, ok := o.(*policyv1.PodDisruptionBudget)
		if !ok {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// budgetIgnored: a pending or finished pod, or one already being deleted,
// is evicted without a budget's consent (it is not serving, or already
// going).
func budgetIgnored(pod *corev1.Pod) bool {
	return podutil.IsTerminal(pod) || pod.Status.Phase == corev1.PodPending || pod.DeletionTimestamp != nil
}

func rvUnset(o *metav1.DeleteOptions) bool {
	return o.Preconditions == nil || o.Preconditions.ResourceVersion == nil
}

func withResourceVersion(o *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	o = o.DeepCopy()
	if o.Preconditions == nil {
		o.Preconditions = &metav1.Preconditions{}
	}
	o.Preconditions.ResourceVersion = &rv
	return o
}

// retryOn runs fn until it succeeds, fails with an error retry does not
// want retried, or has run evictionRetries times (its last error).
func retryOn(ctx context.Context, retry func(error) bool, fn func() error) error {
	var err error
	for i := range evictionRetries {
		if i > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(evictionRetryDelay):
			}
		}
		if err = fn(); err == nil || !retry(err) {
			return err
		}
	}
	return err
}

const evictionRefused = "Cannot evict pod as it would violate the pod's disruption budget."

// tooManyRequests is upstream's answer while a budget's status is behind
// its spec, or the pod became ready while it was being evicted.
func tooManyRequests(pdbName string) error {
	err := apierrors.NewTooManyRequests(evictionRefused, 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdbName)})
	return err
}

// budgetExhausted is the 429 of a budget that allows no disruption, with
// upstream's explanation of why.
func budgetExhausted(pdb *policyv1.PodDisruptionBudget) error {
	err := apierrors.NewTooManyRequests(evictionRefused, 0)
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	failedWith := func() bool { return c != nil && c.Status == metav1.ConditionFalse && c.Message != "" }
	var msg string
	switch {
	case failedWith() && c.Reason == policyv1.SyncFailedReason:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, c.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		msg = fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case failedWith():
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, c.Reason, c.Message)
	default:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
	}
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg})
	return err
}

// forbiddenByBudget is the 403 of a budget in a state that forbids
// evictions.
func forbiddenByBudget(pdbName, reason, detail string) error {
	err := apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}, pdbName, errors.New(reason))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", pdbName, detail)})
	return err
}
