package printers

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	appsv1beta1 "k8s.io/api/apps/v1beta1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	corev1 "k8s.io/api/core/v1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Column descriptions come from the same API versions upstream quotes.
func init() {
	rsSpec := extensionsv1beta1.ReplicaSetSpec{}.SwaggerDoc()
	rsStatus := extensionsv1beta1.ReplicaSetStatus{}.SwaggerDoc()
	dsStatus := extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()
	deployStatus := extensionsv1beta1.DeploymentStatus{}.SwaggerDoc()

	register(gvk("apps", "v1", "Deployment"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Ready", "Number of the pod with ready state"),
		str("Up-to-date", deployStatus["updatedReplicas"]),
		str("Available", deployStatus["availableReplicas"]),
		ageColumn(),
		wide(str("Containers", containersDoc)),
		wide(str("Images", imagesDoc)),
		wide(str("Selector", extensionsv1beta1.DeploymentSpec{}.SwaggerDoc()["selector"])),
	}, typed(func(d *appsv1.Deployment) []interface{} {
		selector := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = s.String()
		}
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		return row(d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, int32Value(d.Spec.Replicas)),
			int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), age(d.CreationTimestamp),
			names, images, selector)
	}))

	register(gvk("apps", "v1", "ReplicaSet"), []metav1.TableColumnDefinition{
		nameColumn(),
		integer("Desired", rsSpec["replicas"]),
		integer("Current", rsStatus["replicas"]),
		integer("Ready", rsStatus["readyReplicas"]),
		ageColumn(),
		wide(str("Containers", containersDoc)),
		wide(str("Images", imagesDoc)),
		wide(str("Selector", rsSpec["selector"])),
	}, typed(func(rs *appsv1.ReplicaSet) []interface{} {
		names, images := containerCells(rs.Spec.Template.Spec.Containers)
		return row(rs.Name, int64(int32Value(rs.Spec.Replicas)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			age(rs.CreationTimestamp), names, images, metav1.FormatLabelSelector(rs.Spec.Selector))
	}))

	register(gvk("apps", "v1", "StatefulSet"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Ready", "Number of the pod with ready state"),
		ageColumn(),
		wide(str("Containers", containersDoc)),
		wide(str("Images", imagesDoc)),
	}, typed(func(ss *appsv1.StatefulSet) []interface{} {
		names, images := containerCells(ss.Spec.Template.Spec.Containers)
		return row(ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, int32Value(ss.Spec.Replicas)),
			age(ss.CreationTimestamp), names, images)
	}))

	register(gvk("apps", "v1", "DaemonSet"), []metav1.TableColumnDefinition{
		nameColumn(),
		integer("Desired", dsStatus["desiredNumberScheduled"]),
		integer("Current", dsStatus["currentNumberScheduled"]),
		integer("Ready", dsStatus["numberReady"]),
		integer("Up-to-date", dsStatus["updatedNumberScheduled"]),
		integer("Available", dsStatus["numberAvailable"]),
		str("Node Selector", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		ageColumn(),
		wide(str("Containers", containersDoc)),
		wide(str("Images", imagesDoc)),
		wide(str("Selector", extensionsv1beta1.DaemonSetSpec{}.SwaggerDoc()["selector"])),
	}, typed(func(ds *appsv1.DaemonSet) []interface{} {
		st := ds.Status
		names, images := containerCells(ds.Spec.Template.Spec.Containers)
		return row(ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
			int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
			age(ds.CreationTimestamp), names, images, metav1.FormatLabelSelector(ds.Spec.Selector))
	}))

	register(gvk("apps", "v1", "ControllerRevision"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Controller", "Controller of the object"),
		str("Revision", appsv1beta1.ControllerRevision{}.SwaggerDoc()["revision"]),
		ageColumn(),
	}, typed(func(cr *appsv1.ControllerRevision) []interface{} {
		controller := "<none>"
		if ref := metav1.GetControllerOf(cr); ref != nil {
			controller = ref.Name
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
				if gk := gv.WithKind(ref.Kind).GroupKind(); !gk.Empty() {
					controller = strings.ToLower(gk.String()) + "/" + ref.Name
				}
			}
		}
		return row(cr.Name, controller, cr.Revision, age(cr.CreationTimestamp))
	}))

	jobSpec := batchv1.JobSpec{}.SwaggerDoc()
	register(gvk("batch", "v1", "Job"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Status", "Status of the job."),
		str("Completions", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		str("Duration", "Time required to complete the job."),
		ageColumn(),
		wide(str("Containers", containersDoc)),
		wide(str("Images", imagesDoc)),
		wide(str("Selector", jobSpec["selector"])),
	}, typed(jobCells))

	cronSpec := batchv1beta1.CronJobSpec{}.SwaggerDoc()
	cronStatus := batchv1beta1.CronJobStatus{}.SwaggerDoc()
	register(gvk("batch", "v1", "CronJob"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Schedule", cronSpec["schedule"]),
		str("Timezone", cronSpec["timeZone"]),
		boolean("Suspend", cronSpec["suspend"]),
		integer("Active", cronStatus["active"]),
		str("Last Schedule", cronStatus["lastScheduleTime"]),
		ageColumn(),
		wide(str("Containers", containersDoc)),
		wide(str("Images", imagesDoc)),
		wide(str("Selector", jobSpec["selector"])),
	}, typed(func(cj *batchv1.CronJob) []interface{} {
		last := "<none>"
		if cj.Status.LastScheduleTime != nil {
			last = age(*cj.Status.LastScheduleTime)
		}
		tz := "<none>"
		if cj.Spec.TimeZone != nil {
			tz = *cj.Spec.TimeZone
		}
		tmpl := cj.Spec.JobTemplate.Spec
		names, images := containerCells(tmpl.Template.Spec.Containers)
		return row(cj.Name, cj.Spec.Schedule, tz, boolPtr(cj.Spec.Suspend), int64(len(cj.Status.Active)), last,
			age(cj.CreationTimestamp), names, images, metav1.FormatLabelSelector(tmpl.Selector))
	}))

	// The scale subresource of every scalable kind (the API server asks
	// for it by this kind).
	register(gvk("autoscaling", "v1", "Scale"), []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Description: metaDoc["name"]},
		integer("Desired", autoscalingv1.ScaleSpec{}.SwaggerDoc()["replicas"]),
		integer("Available", autoscalingv1.ScaleStatus{}.SwaggerDoc()["replicas"]),
		ageColumn(),
	}, typed(func(sc *autoscalingv1.Scale) []interface{} {
		return row(sc.Name, int64(sc.Spec.Replicas), int64(sc.Status.Replicas), age(sc.CreationTimestamp))
	}))

	hpaSpec := autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()
	register(gvk("autoscaling", "v2", "HorizontalPodAutoscaler"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Reference", hpaSpec["scaleTargetRef"]),
		str("Targets", hpaSpec["metrics"]),
		str("MinPods", hpaSpec["minReplicas"]),
		str("MaxPods", hpaSpec["maxReplicas"]),
		str("Replicas", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
		ageColumn(),
	}, typed(func(h *autoscalingv2.HorizontalPodAutoscaler) []interface{} {
		minPods := "<unset>"
		if h.Spec.MinReplicas != nil {
			minPods = fmt.Sprint(*h.Spec.MinReplicas)
		}
		ref := h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name
		return row(h.Name, ref, hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics), minPods,
			int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), age(h.CreationTimestamp))
	}))
}

func jobCells(job *batchv1.Job) []interface{} {
	var completions string
	switch par := int32Value(job.Spec.Parallelism); {
	case job.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	case par > 1:
		completions = fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, par)
	default:
		completions = fmt.Sprintf("%d/1", job.Status.Succeeded)
	}

	var took string
	switch start, end := job.Status.StartTime, job.Status.CompletionTime; {
	case start == nil:
	case end == nil:
		took = duration.HumanDuration(now().Sub(start.Time))
	default:
		took = duration.HumanDuration(end.Sub(start.Time))
	}

	var status string
	switch {
	case jobCondition(job, batchv1.JobComplete):
		status = "Complete"
	case jobCondition(job, batchv1.JobFailed):
		status = "Failed"
	case job.DeletionTimestamp != nil:
		status = "Terminating"
	case jobCondition(job, batchv1.JobSuspended):
		status = "Suspended"
	case jobCondition(job, batchv1.JobFailureTarget):
		status = "FailureTarget"
	default:
		status = "Running"
	}

	names, images := containerCells(job.Spec.Template.Spec.Containers)
	return row(job.Name, status, completions, took, age(job.CreationTimestamp),
		names, images, metav1.FormatLabelSelector(job.Spec.Selector))
}

// jobCondition reports whether the first condition of type t is True.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hpaTargets is the TARGETS cell: "current/target" per metric, at most two
// shown.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	list := make([]string, 0, len(specs))
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, hpaTarget(spec, st))
	}
	return firstN(list, 2, ", ")
}

func hpaTarget(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	const unknown = "<unknown>"
	// valueTarget prints a Value or AverageValue target, "(avg)" marking the
	// latter.
	valueTarget := func(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
		current := unknown
		if t.AverageValue != nil {
			if cur != nil && cur.AverageValue != nil {
				current = cur.AverageValue.String()
			}
			return current + "/" + t.AverageValue.String() + " (avg)"
		}
		if cur != nil {
			current = cur.Value.String()
		}
		return current + "/" + t.Value.String()
	}
	// resourceTarget prints "name: current/target" for resource metrics.
	resourceTarget := func(name corev1.ResourceName, t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
		current := unknown
		if t.AverageValue != nil {
			if cur != nil {
				current = cur.AverageValue.String()
			}
			return fmt.Sprintf("%s: %s/%s", name, current, t.AverageValue.String())
		}
		if cur != nil && cur.AverageUtilization != nil {
			current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
		}
		target := "<auto>"
		if t.AverageUtilization != nil {
			target = fmt.Sprintf("%d%%", *t.AverageUtilization)
		}
		return fmt.Sprintf("%s: %s/%s", name, current, target)
	}

	switch {
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.External != nil {
			cur = &st.External.Current
		}
		return valueTarget(spec.External.Target, cur)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		current := unknown
		if st != nil && st.Pods != nil {
			current = quantityString(st.Pods.Current.AverageValue)
		}
		return current + "/" + quantityString(spec.Pods.Target.AverageValue)
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Object != nil {
			cur = &st.Object.Current
		}
		return valueTarget(spec.Object.Target, cur)
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Resource != nil {
			cur = &st.Resource.Current
		}
		return resourceTarget(spec.Resource.Name, spec.Resource.Target, cur)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return resourceTarget(spec.ContainerResource.Name, spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// quantityString prints an optional quantity ("<nil>" when unset, as
// Quantity.String does).
func quantityString(q *resource.Quantity) string { return q.String() }
