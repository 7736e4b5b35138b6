package podautoscaler

import (
	"errors"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/api/metricsapi"
)

// Settings are the controller manager's HPA flags.
type Settings struct {
	// Tolerance is --horizontal-pod-autoscaler-tolerance (0.1), used in
	// each direction a behavior does not set its own.
	Tolerance float64
	// DownscaleWindow is --horizontal-pod-autoscaler-downscale-stabilization
	// (5 minutes).
	DownscaleWindow time.Duration
	Readiness       Readiness
}

// DefaultSettings are upstream's defaults.
var DefaultSettings = Settings{Tolerance: 0.1, DownscaleWindow: 5 * time.Minute, Readiness: DefaultReadiness}

// State is what one sync of an HPA reads.
type State struct {
	HPA *autoscalingv2.HorizontalPodAutoscaler
	Now time.Time

	// Scale is the target's /scale; ScaleErr why it could not be had.
	Scale          *autoscalingv1.Scale
	TargetResource schema.GroupResource
	ScaleErr       error
	// Pods are the pods the scale's selector selects (when it parses).
	Pods []*corev1.Pod
	// SelectingHPAs are the keys of the HPAs whose selector selects one
	// of Pods, this one included (at most two are needed).
	SelectingHPAs []string
	// PodMetrics are the metrics.k8s.io samples of the pods the selector
	// selects (fetched only if a Resource or ContainerResource metric
	// needs them), or why they could not be had.
	PodMetrics    []metricsapi.PodMetrics
	PodMetricsErr error
	// CustomMetricsErr and ExternalMetricsErr say why Pods and Object
	// metrics (custom.metrics.k8s.io) and External metrics
	// (external.metrics.k8s.io) cannot be read.
	CustomMetricsErr, ExternalMetricsErr error

	History  History
	Settings Settings
}

// Event is an event the plan records on the HPA.
type Event struct {
	Type, Reason, Message string
}

// Plan is what a sync decides.
type Plan struct {
	// Rescale: write Desired to the target's scale, for Reason.
	Rescale bool
	Desired int32
	Reason  string
	// Status is the HPA's status before the rescale (if any); see
	// Plan.Finish.
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	// Events are recorded whatever the outcome of the rescale.
	Events []Event
	// History is the HPA's history to keep.
	History History
	// Err, if set, makes the sync fail (the HPA is looked at again after
	// the sync period) after the status is written.
	Err error
}

// planner accumulates a plan's conditions and events.
type planner struct {
	st     State
	hpa    *autoscalingv2.HorizontalPodAutoscaler // st.HPA with a status being made
	events []Event
}

func (p *planner) event(typ, reason, msg string) {
	p.events = append(p.events, Event{typ, reason, msg})
}

func (p *planner) setCondition(t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, msg string) {
	p.hpa.Status.Conditions = setCondition(p.hpa.Status.Conditions, t, status, reason, msg, p.st.Now)
}

// PlanSync decides one sync of st.HPA, as upstream's reconcileAutoscaler.
func PlanSync(st State) Plan {
	hpa := st.HPA.DeepCopy()
	p := &planner{st: st, hpa: hpa}
	hist := st.History.clone()
	plan := Plan{History: hist}
	finish := func(err error) Plan {
		plan.Status, plan.Events, plan.Err = hpa.Status, p.events, err
		return plan
	}

	if st.ScaleErr != nil {
		p.event(corev1.EventTypeWarning, "FailedGetScale", st.ScaleErr.Error())
		p.setCondition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: "+st.ScaleErr.Error())
		return finish(st.ScaleErr)
	}
	p.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	current := st.Scale.Spec.Replicas
	if len(plan.History.Recommendations) == 0 {
		plan.History.Recommendations = []Recommendation{{current, st.Now}}
	}

	minReplicas := minReplicasOf(hpa)
	hasObjectOrExternal := hasObjectOrExternalMetrics(hpa)
	scaledToZero := conditionTrue(hpa.Status.Conditions, autoscalingv2.ScaledToZero)

	var (
		desired   int32
		reason    string
		statuses  []autoscalingv2.MetricStatus
		rescale   = true
		compute   = true
		resultErr error
	)
	switch {
	case current == 0:
		if !((minReplicas != 0 && scaledToZero) || (scaledToZero && hasObjectOrExternal)) {
			compute, rescale = false, false
			p.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		}
	case current > hpa.Spec.MaxReplicas:
		reason, desired, compute = "Current number of replicas above Spec.MaxReplicas", hpa.Spec.MaxReplicas, false
	case current < minReplicas:
		reason, desired, compute = "Current number of replicas below Spec.MinReplicas", minReplicas, false
	}

	if compute {
		proposal, metric, sts, err := p.computeReplicas()
		statuses = sts
		if err != nil && proposal == -1 {
			hpa.Status = statusWith(hpa, current, hpa.Status.DesiredReplicas, statuses)
			p.event(corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
			return finish(fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", reference(hpa), err))
		}
		resultErr = err
		rescaleMetric := ""
		if proposal > desired {
			desired, rescaleMetric = proposal, metric
		}
		if desired > current {
			reason = rescaleMetric + " above target"
		}
		if desired < current {
			reason = "All metrics below target"
		}
		var conds []conditionUpdate
		desired, conds = normalize(&plan.History, normalization{
			Current: current, Desired: desired, Min: minReplicas, Max: hpa.Spec.MaxReplicas,
			Behavior: hpa.Spec.Behavior, DownscaleWindow: st.Settings.DownscaleWindow, Now: st.Now,
		})
		for _, c := range conds {
			p.setCondition(c.Type, c.Status, c.Reason, c.Message)
		}
		if current == 0 && minReplicas != 0 && scaledToZero && desired < minReplicas {
			desired = minReplicas
			if reason == "" {
				reason = "Current number of replicas below Spec.MinReplicas"
			}
		}
		rescale = desired != current
	}
	if !rescale {
		hpa.Status = statusWith(hpa, current, current, statuses)
		return finish(resultErr)
	}
	plan.Rescale, plan.Desired, plan.Reason = true, desired, reason
	hpa.Status = statusWith(hpa, current, desired, statuses)
	return finish(resultErr)
}

// Finish is the status and events once the rescale the plan of st asked
// for succeeded (err nil) or failed, and the history to keep.
func (pl Plan) Finish(st State, err error) (autoscalingv2.HorizontalPodAutoscalerStatus, []Event, History) {
	status := *pl.Status.DeepCopy()
	if !pl.Rescale {
		return status, pl.Events, pl.History
	}
	current, now := st.Scale.Spec.Replicas, st.Now
	events := append([]Event(nil), pl.Events...)
	if err != nil {
		events = append(events, Event{corev1.EventTypeWarning, "FailedRescale", fmt.Sprintf("New size: %d; reason: %s; error: %v", pl.Desired, pl.Reason, err)})
		status.Conditions = setCondition(status.Conditions, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: "+err.Error(), now)
		status.CurrentReplicas = current
		// the desired count stays the last one written
		return status, events, pl.History
	}
	status.Conditions = setCondition(status.Conditions, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", pl.Desired), now)
	events = append(events, Event{corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", pl.Desired, pl.Reason)})
	if pl.Desired == 0 && current > 0 && minReplicasOf(st.HPA) == 0 && hasObjectOrExternalMetrics(st.HPA) {
		status.Conditions = setCondition(status.Conditions, autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero", now)
	} else {
		status.Conditions = setCondition(status.Conditions, autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero", "the HPA controller did not scale the workload to zero", now)
	}
	status.LastScaleTime = &metav1.Time{Time: now}
	hist := pl.History.clone()
	recordScale(&hist, st.HPA.Spec.Behavior, current, pl.Desired, now)
	return status, events, hist
}

// statusWith is hpa's status with the given counts and metrics, its
// conditions and last scale time kept.
func statusWith(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, metrics []autoscalingv2.MetricStatus) autoscalingv2.HorizontalPodAutoscalerStatus {
	gen := hpa.Generation
	return autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: &gen,
		CurrentReplicas:    current,
		DesiredReplicas:    desired,
		LastScaleTime:      hpa.Status.LastScaleTime,
		CurrentMetrics:     metrics,
		Conditions:         hpa.Status.Conditions,
	}
}

// StatusChanged reports whether status differs from hpa's.
func StatusChanged(hpa *autoscalingv2.HorizontalPodAutoscaler, status *autoscalingv2.HorizontalPodAutoscalerStatus) bool {
	return !apiequality.Semantic.DeepEqual(&hpa.Status, status)
}

func reference(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	return fmt.Sprintf("%s/%s/%s", hpa.Spec.ScaleTargetRef.Kind, hpa.Namespace, hpa.Spec.ScaleTargetRef.Name)
}

// minReplicasOf is hpa's minimum count (1 when unset).
func minReplicasOf(hpa *autoscalingv2.HorizontalPodAutoscaler) int32 {
	if hpa.Spec.MinReplicas != nil {
		return *hpa.Spec.MinReplicas
	}
	return 1
}

func hasObjectOrExternalMetrics(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
	for _, m := range hpa.Spec.Metrics {
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			return true
		}
	}
	return false
}

func conditionTrue(conds []autoscalingv2.HorizontalPodAutoscalerCondition, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setCondition sets a condition in a copy of conds, its transition time
// moving only when its status changes.
func setCondition(conds []autoscalingv2.HorizontalPodAutoscalerCondition, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) []autoscalingv2.HorizontalPodAutoscalerCondition {
	out := append([]autoscalingv2.HorizontalPodAutoscalerCondition(nil), conds...)
	i := 0
	for i < len(out) && out[i].Type != t {
		i++
	}
	if i == len(out) {
		out = append(out, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t})
	}
	c := &out[i]
	if c.Status != status {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	c.Status, c.Reason, c.Message = status, reason, msg
	return out
}

// computeReplicas is the largest count any metric calls for, the metric
// that calls for it and every metric's status. A count of -1 with an
// error: no count (every metric failed, or one failed and the others call
// for fewer replicas than there are).
func (p *planner) computeReplicas() (int32, string, []autoscalingv2.MetricStatus, error) {
	hpa := p.hpa
	specReplicas := p.st.Scale.Spec.Replicas
	if err := p.validateSelector(); err != nil {
		return -1, "", nil, err
	}
	statuses := make([]autoscalingv2.MetricStatus, len(hpa.Spec.Metrics))
	var (
		replicas    int32
		metric      string
		invalid     int
		firstErr    error
		invalidCond conditionUpdate
	)
	for i, spec := range hpa.Spec.Metrics {
		proposal, name, cond, err := p.computeMetric(spec, &statuses[i])
		if err != nil {
			if invalid == 0 {
				invalidCond, firstErr = cond, err
			}
			invalid++
			continue
		}
		if replicas == 0 || proposal > replicas {
			replicas, metric = proposal, name
		}
	}
	if firstErr != nil {
		firstErr = fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %w", invalid, len(hpa.Spec.Metrics), firstErr)
	}
	if invalid >= len(hpa.Spec.Metrics) || (invalid > 0 && replicas < specReplicas) {
		p.setCondition(invalidCond.Type, invalidCond.Status, invalidCond.Reason, invalidCond.Message)
		return -1, "", statuses, firstErr
	}
	p.setCondition(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from "+metric)
	return replicas, metric, statuses, firstErr
}

// validateSelector checks the scale's selector: present, parsing, and
// selecting pods of no other HPA.
func (p *planner) validateSelector() error {
	sel := p.st.Scale.Status.Selector
	if sel == "" {
		msg := "selector is required"
		p.event(corev1.EventTypeWarning, "SelectorRequired", msg)
		p.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector")
		return errors.New(msg)
	}
	if _, err := labels.Parse(sel); err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		p.event(corev1.EventTypeWarning, "InvalidSelector", msg)
		p.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg)
		return errors.New(msg)
	}
	if len(p.st.SelectingHPAs) > 1 {
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", sel, p.st.SelectingHPAs)
		p.event(corev1.EventTypeWarning, "AmbiguousSelector", msg)
		p.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg)
		return errors.New(msg)
	}
	return nil
}

// unable is the ScalingActive condition (and the event) of a metric that
// could not be computed.
func (p *planner) unable(reason string, err error) conditionUpdate {
	p.event(corev1.EventTypeWarning, reason, err.Error())
	return conditionUpdate{autoscalingv2.ScalingActive, corev1.ConditionFalse, reason, fmt.Sprintf("the HPA was unable to compute the replica count: %v", err)}
}

// computeMetric is one metric's proposal, its name and its status.
func (p *planner) computeMetric(spec autoscalingv2.MetricSpec, status *autoscalingv2.MetricStatus) (int32, string, conditionUpdate, error) {
	hpa := p.hpa
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			break
		}
		n, name, cur, err := p.resourceMetric(spec.Resource.Name, "", spec.Resource.Target, "%s resource utilization (percentage of request)")
		if err != nil {
			return 0, "", p.unable("FailedGetResourceMetric", err), fmt.Errorf("failed to get %s resource metric value: %w", spec.Resource.Name, err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Resource: &autoscalingv2.ResourceMetricStatus{Name: spec.Resource.Name, Current: cur}}
		return n, name, conditionUpdate{}, nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			break
		}
		cr := spec.ContainerResource
		n, name, cur, err := p.resourceMetric(cr.Name, cr.Container, cr.Target, "%s container resource utilization (percentage of request)")
		if err != nil {
			return 0, "", p.unable("FailedGetContainerResourceMetric", err), fmt.Errorf("failed to get %s container metric value: %w", cr.Container, err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{Name: cr.Name, Container: cr.Container, Current: cur}}
		return n, name, conditionUpdate{}, nil
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil {
			break
		}
		err := fmt.Errorf("unable to get metric %s: unable to fetch metrics from custom metrics API: %w", spec.Pods.Metric.Name, p.st.CustomMetricsErr)
		return 0, "", p.unable("FailedGetPodsMetric", err), fmt.Errorf("failed to get pods metric value: %w", err)
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object == nil {
			break
		}
		o := spec.Object
		err := fmt.Errorf("unable to get metric %s on %s %s/%s: unable to fetch metrics from custom metrics API: %w", o.Metric.Name, o.DescribedObject.Kind, hpa.Namespace, o.DescribedObject.Name, p.st.CustomMetricsErr)
		return 0, "", p.unable("FailedGetObjectMetric", err), fmt.Errorf("failed to get object metric value: %w", err)
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External == nil {
			break
		}
		e := spec.External
		err := fmt.Errorf("unable to get external metric %s/%s/%+v: unable to fetch metrics from external metrics API: %w", hpa.Namespace, e.Metric.Name, e.Metric.Selector, p.st.ExternalMetricsErr)
		return 0, "", p.unable("FailedGetExternalMetric", err), fmt.Errorf("failed to get %s external metric value: %w", e.Metric.Name, err)
	}
	err := fmt.Errorf("unknown metric source type %q", string(spec.Type))
	return 0, "", p.unable("InvalidMetricSourceType", err), err
}

// resourceMetric is a Resource or ContainerResource metric's proposal.
func (p *planner) resourceMetric(res corev1.ResourceName, container string, target autoscalingv2.MetricTarget, utilizationName string) (int32, string, autoscalingv2.MetricValueStatus, error) {
	current := p.st.Scale.Spec.Replicas
	tol := tolerances(p.hpa, p.st.Settings.Tolerance)
	in, err := p.podSamples(res, container)
	if target.AverageValue != nil {
		var n int32
		var avg int64
		if err == nil {
			n, avg, err = AverageValue(in, current, target.AverageValue.MilliValue(), res, tol)
		}
		if err != nil {
			return 0, "", autoscalingv2.MetricValueStatus{}, fmt.Errorf("failed to get %s usage: %w", res, err)
		}
		q := quantity(res, avg)
		return n, fmt.Sprintf("%s resource", res), autoscalingv2.MetricValueStatus{AverageValue: &q}, nil
	}
	if target.AverageUtilization == nil {
		return 0, "", autoscalingv2.MetricValueStatus{}, errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	var n, util int32
	var avg int64
	if err == nil {
		n, util, avg, err = ResourceUtilization(in, current, *target.AverageUtilization, res, container, tol)
	}
	if err != nil {
		return 0, "", autoscalingv2.MetricValueStatus{}, fmt.Errorf("failed to get %s utilization: %w", res, err)
	}
	q := quantity(res, avg)
	return n, fmt.Sprintf(utilizationName, res), autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: &q}, nil
}

// podSamples are the pods and their samples of res (one container's, or
// the sum of the containers').
func (p *planner) podSamples(res corev1.ResourceName, container string) (Pods, error) {
	wrap := func(err error) error {
		return fmt.Errorf("unable to get metrics for resource %s: %w", res, err)
	}
	if p.st.PodMetricsErr != nil {
		return Pods{}, wrap(fmt.Errorf("unable to fetch metrics from resource metrics API: %w", p.st.PodMetricsErr))
	}
	if len(p.st.PodMetrics) == 0 {
		return Pods{}, wrap(errNoPodMetrics)
	}
	return Pods{Pods: p.st.Pods, Metrics: samples(p.st.PodMetrics, res, container), Now: p.st.Now, Readiness: p.st.Settings.Readiness}, nil
}

// samples are the PodMetrics' values of res in milli-units: the named
// container's, or, with container "", the sum over the containers (a pod
// one of whose containers lacks res has none).
func samples(list []metricsapi.PodMetrics, res corev1.ResourceName, container string) PodMetrics {
	out := make(PodMetrics, len(list))
	for _, m := range list {
		var sum int64
		found := container == "" && len(m.Containers) > 0
		for _, c := range m.Containers {
			q, ok := c.Usage[res]
			if container != "" {
				if c.Name == container {
					sum, found = q.MilliValue(), ok
					break
				}
				continue
			}
			if !ok {
				found = false
				break
			}
			sum += q.MilliValue()
		}
		if found {
			out[m.Name] = PodMetric{Timestamp: m.Timestamp.Time, Window: m.Window.Duration, Value: sum}
		}
	}
	return out
}

func quantity(res corev1.ResourceName, milli int64) resource.Quantity {
	format := resource.DecimalSI
	if res == corev1.ResourceMemory {
		format = resource.BinarySI
	}
	return *resource.NewMilliQuantity(milli, format)
}

// tolerances are the HPA's behavior's, else the controller's.
func tolerances(hpa *autoscalingv2.HorizontalPodAutoscaler, def float64) Tolerances {
	t := Tolerances{Down: def, Up: def}
	if b := hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.Down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.Up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}
