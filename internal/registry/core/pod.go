package core

import (
	"context"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/registry/core/subresources"
)

func pods() registry.Resource {
	return registry.Resource{
		Kind:                corev1.SchemeGroupVersion.WithKind("Pod"),
		Plural:              "pods",
		ReturnDeletedObject: true,
		Singular:            "pod",
		ShortNames:          []string{"po"},
		Categories:          []string{"all"},
		Namespaced:          true,
		Subresources: []string{"status", "binding", "eviction", "ephemeralcontainers",
			"resize", "log", "exec", "attach", "portforward", "proxy"},
		Parts: map[string]registry.Part{"ephemeralcontainers": {Merge: func(obj, old runtime.Object) runtime.Object {
			out := old.DeepCopyObject().(*corev1.Pod)
			out.Spec.EphemeralContainers = obj.(*corev1.Pod).Spec.EphemeralContainers
			return out
		}, Validate: func(obj, old runtime.Object) field.ErrorList {
			return podspec.ValidatePodEphemeralContainersUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
		}}, "resize": {
			Merge: func(obj, old runtime.Object) runtime.Object {
				return podspec.MergeResize(obj.(*corev1.Pod), old.(*corev1.Pod))
			},
			Validate: func(obj, old runtime.Object) field.ErrorList {
				return podspec.ValidatePodResize(obj.(*corev1.Pod), old.(*corev1.Pod))
			},
		}},
		Handlers: map[string]registry.Handler{"binding": subresources.Binding, "eviction": subresources.Eviction,
			"log": subresources.Log, "exec": subresources.Exec, "attach": subresources.Attach,
			"portforward": subresources.PortForward, "proxy": subresources.Proxy},
		// Upstream sets metadata.generation on pods since v1.33.
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default:          func(obj runtime.Object) { defaultPod(obj.(*corev1.Pod)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) { preparePodForCreate(obj.(*corev1.Pod)) },
			GracePeriod:      podGracePeriod,
			Validate: validated(func(obj runtime.Object) field.ErrorList {
				pod := obj.(*corev1.Pod)
				if _, creating := podCreates.LoadAndDelete(pod); creating {
					return podspec.ValidatePodCreate(pod)
				}
				return podspec.ValidatePod(pod)
			}),
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				// Validate has already checked the new pod itself.
				pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
				errs := validatePodAnnotationUpdates(pod, oldPod)
				return append(errs, podspec.ValidatePodSpecUpdate(&pod.Spec, &oldPod.Spec, field.NewPath("spec"))...)
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				return ValidatePodStatusUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
			},
			SelectableFields: func(obj runtime.Object) fields.Set { return podFields(obj.(*corev1.Pod)) },
		},
	}
}

// podCreates marks the pods PrepareForCreate has seen, so that Validate —
// which the generic handler also runs on updates — applies the create-only
// rules (no ephemeral containers, no nodeName while gated) to creates only.
// The mark is taken by Validate, which always follows PrepareForCreate on
// the same object.
var podCreates sync.Map // *corev1.Pod -> struct{}

func defaultPod(pod *corev1.Pod) {
	podspec.DefaultPod(pod)
	// The deprecated serviceAccount field names the account when
	// serviceAccountName does not, as upstream's conversion reads it.
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	// Keep the singular IP fields and their plural forms in step, as
	// upstream's conversion does.
	st := &pod.Status
	if st.PodIP != "" && len(st.PodIPs) == 0 {
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	} else if len(st.PodIPs) > 0 {
		st.PodIP = st.PodIPs[0].IP
	}
	if st.HostIP != "" && len(st.HostIPs) == 0 {
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	} else if len(st.HostIPs) > 0 {
		st.HostIP = st.HostIPs[0].IP
	}
}

func preparePodForCreate(pod *corev1.Pod) {
	pod.Status = corev1.PodStatus{
		Phase:    corev1.PodPending,
		QOSClass: podspec.ComputePodQOS(pod),
	}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		})
	}
	applyMatchLabelKeys(pod)
	podCreates.Store(pod, struct{}{})
}

// applyMatchLabelKeys merges matchLabelKeys/mismatchLabelKeys of pod
// affinity terms and topology spread constraints into their label
// selectors, using the pod's own label values, as upstream does on create.
func applyMatchLabelKeys(pod *corev1.Pod) {
	merge := func(sel *metav1.LabelSelector, keys []string, op metav1.LabelSelectorOperator) {
		for _, k := range keys {
			if v, ok := pod.Labels[k]; ok {
				sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: []string{v}})
			}
		}
	}
	term := func(t *corev1.PodAffinityTerm) {
		if t.LabelSelector == nil || (len(t.MatchLabelKeys) == 0 && len(t.MismatchLabelKeys) == 0) {
			return
		}
		merge(t.LabelSelector, t.MatchLabelKeys, metav1.LabelSelectorOpIn)
		merge(t.LabelSelector, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
	}
	if a := pod.Spec.Affinity; a != nil {
		for _, pa := range []*corev1.PodAffinity{a.PodAffinity} {
			if pa == nil {
				continue
			}
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				term(&pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				term(&pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				term(&pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				term(&pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
		}
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		c := &pod.Spec.TopologySpreadConstraints[i]
		if c.LabelSelector != nil && len(c.MatchLabelKeys) > 0 {
			merge(c.LabelSelector, c.MatchLabelKeys, metav1.LabelSelectorOpIn)
		}
	}
}

func podFields(pod *corev1.Pod) fields.Set {
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}

const (
	mirrorPodAnnotation   = "kubernetes.io/config.mirror"
	appArmorCtrAnnotation = "container.apparmor.security.beta.kubernetes.io/"
)

func validatePodAnnotationUpdates(pod, old *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("metadata", "annotations")
	isGuarded := func(k string) (string, bool) {
		switch {
		case k == mirrorPodAnnotation:
			return "mirror pod annotation", true
		case len(k) > len(appArmorCtrAnnotation) && k[:len(appArmorCtrAnnotation)] == appArmorCtrAnnotation:
			return "AppArmor annotations", true
		}
		return "", false
	}
	for k, ov := range old.Annotations {
		if nv, ok := pod.Annotations[k]; ok && nv == ov {
			continue
		}
		if what, ok := isGuarded(k); ok {
			errs = append(errs, field.Forbidden(p.Key(k), "may not remove or update "+what))
		}
	}
	for k := range pod.Annotations {
		if _, ok := old.Annotations[k]; ok {
			continue
		}
		if what, ok := isGuarded(k); ok {
			errs = append(errs, field.Forbidden(p.Key(k), "may not add "+what))
		}
	}
	return errs
}

// ValidatePodStatusUpdate checks a pods/status write as upstream does:
// condition types, the nominated node's name, QoS class immutability, no
// container leaving the terminated state when the pod does not restart it,
// and well-formed pod and host IPs.
//
// It also carries out the two adjustments upstream's status strategy makes
// before validating, since the generic handler has no status-prepare hook:
// an empty qosClass keeps the stored one, and a zero observedGeneration
// keeps the stored one.
func ValidatePodStatusUpdate(pod, old *corev1.Pod) field.ErrorList {
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = old.Status.QOSClass
	}
	if pod.Status.ObservedGeneration == 0 {
		pod.Status.ObservedGeneration = old.Status.ObservedGeneration
	}

	var errs field.ErrorList
	system := sets.New(corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized)
	for i, c := range pod.Status.Conditions {
		if system.Has(c.Type) {
			continue
		}
		// upstream reports these under metadata, with a capital T
		errs = append(errs, validateQualifiedName(string(c.Type), field.NewPath("metadata", "conditions").Index(i).Child("Type"))...)
	}
	sp := field.NewPath("status")
	if n := pod.Status.NominatedNodeName; n != "" && n != old.Status.NominatedNodeName {
		errs = append(errs, validateNameWith(apivalidation.NameIsDNSSubdomain, n, sp.Child("nominatedNodeName"))...)
	}
	errs = append(errs, immutable(pod.Status.QOSClass, old.Status.QOSClass, sp.Child("qosClass"))...)
	errs = append(errs, validateContainerStateTransition(pod.Status.ContainerStatuses, old.Status.ContainerStatuses, sp.Child("containerStatuses"), old.Spec.RestartPolicy, nil)...)
	errs = append(errs, validateContainerStateTransition(pod.Status.InitContainerStatuses, old.Status.InitContainerStatuses, sp.Child("initContainerStatuses"), old.Spec.RestartPolicy, old.Spec.InitContainers)...)
	errs = append(errs, validateContainerStateTransition(pod.Status.EphemeralContainerStatuses, old.Status.EphemeralContainerStatuses, sp.Child("ephemeralContainerStatuses"), corev1.RestartPolicyNever, nil)...)

	claims := sets.New[string]()
	for _, c := range pod.Spec.ResourceClaims {
		claims.Insert(c.Name)
	}
	seenClaims := sets.New[string]()
	for i, s := range pod.Status.ResourceClaimStatuses {
		p := sp.Child("resourceClaimStatuses").Index(i).Child("name")
		if !claims.Has(s.Name) {
			errs = append(errs, field.Invalid(p, s.Name, "must match the name of an entry in `spec.resourceClaims`"))
		}
		if seenClaims.Has(s.Name) {
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		seenClaims.Insert(s.Name)
	}

	var podIPs []string
	for i, ip := range pod.Status.PodIPs {
		errs = append(errs, validation.IsValidIP(sp.Child("podIPs").Index(i), ip.IP)...)
		podIPs = append(podIPs, ip.IP)
	}
	errs = append(errs, validateIPList(podIPs, pod.Status.PodIPs, sp.Child("podIPs"))...)
	if len(pod.Status.HostIPs) > 0 {
		hp := sp.Child("hostIPs")
		if pod.Status.HostIP != pod.Status.HostIPs[0].IP {
			errs = append(errs, field.Invalid(hp.Index(0).Child("ip"), pod.Status.HostIPs[0].IP, "must be equal to `hostIP`"))
		}
		var hostIPs []string
		for i, ip := range pod.Status.HostIPs {
			errs = append(errs, validation.IsValidIP(hp.Index(i), ip.IP)...)
			hostIPs = append(hostIPs, ip.IP)
		}
		errs = append(errs, validateIPList(hostIPs, pod.Status.HostIPs, hp)...)
	}
	return errs
}

// validateIPList: at most one address per family, no duplicates.
func validateIPList[T any](ips []string, raw []T, fldPath *field.Path) field.ErrorList {
	if len(ips) < 2 {
		return nil
	}
	var errs field.ErrorList
	if !isDualStack(ips) || len(ips) > 2 {
		errs = append(errs, field.Invalid(fldPath, raw, "may specify no more than one IP for each IP family"))
	}
	seen := sets.New[string]()
	for i, ip := range ips {
		if seen.Has(ip) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), raw[i]))
		}
		seen.Insert(ip)
	}
	return errs
}

// validateContainerStateTransition forbids a terminated container from
// becoming non-terminated unless the restart policy restarts it.
// initContainers, when given, exempts restartable (sidecar) init containers.
func validateContainerStateTransition(newS, oldS []corev1.ContainerStatus, fldPath *field.Path, policy corev1.RestartPolicy, initContainers []corev1.Container) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	var errs field.ErrorList
	for i, o := range oldS {
		if o.State.Terminated == nil {
			continue
		}
		if o.State.Terminated.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure {
			continue
		}
		sidecar := false
		for _, c := range initContainers {
			if c.Name == o.Name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecar = true
			}
		}
		if sidecar {
			continue
		}
		for _, n := range newS {
			if n.Name == o.Name && n.State.Terminated == nil {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

// ValidateBinding checks a pods/binding body: the target must be a Node
// (or of unset kind) and name one.
func ValidateBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}

// podGracePeriod is the grace period of a pod's delete that must wait for
// its kubelet: only pods bound to a node and not yet terminated; ok is
// false when the delete may proceed at once.
func podGracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) (int64, bool) {
	pod := obj.(*corev1.Pod)
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if opts.GracePeriodSeconds != nil {
		grace = *opts.GracePeriodSeconds
	}
	if grace <= 0 || pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0, false
	}
	return grace, true
}
