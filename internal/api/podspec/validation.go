package podspec

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// options are the few switches upstream's pod validation takes.
type options struct {
	// resourceIsPod: the spec belongs to a Pod, not a template; some checks
	// (hostPort under hostNetwork, image volume references) are stricter.
	resourceIsPod bool
}

// ValidatePodSpec checks a PodSpec the way upstream checks one embedded in a
// template (a Deployment's, a Job's, …). meta is the owning pod's metadata,
// used only to check the names of generic ephemeral volumes' claims; pass nil
// for templates. Errors carry upstream's field paths under fldPath and
// upstream's messages. The spec is expected to be defaulted already.
func ValidatePodSpec(spec *corev1.PodSpec, meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	return validatePodSpec(spec, meta, fldPath, options{})
}

// ValidatePodTemplateSpec checks a pod template: its labels and annotations
// (the only metadata a template may carry that is validated here), its spec,
// and that it has no ephemeral containers.
func ValidatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	if t == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	allErrs := metavalidation.ValidateLabels(t.Labels, fldPath.Child("labels"))
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodSpecificAnnotations(t.Annotations, &t.Spec, fldPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodSpec(&t.Spec, nil, fldPath.Child("spec"), options{})...)
	if len(t.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}

// ValidatePod checks a Pod's spec and pod-specific annotations in the
// context of a Pod (stricter than a template). It does not check
// ObjectMeta, which the generic handler validates. Use ValidatePodCreate for
// the create-only rules.
func ValidatePod(pod *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validatePodSpecificAnnotations(pod.Annotations, &pod.Spec, field.NewPath("metadata", "annotations"))
	allErrs = append(allErrs, validatePodSpec(&pod.Spec, &pod.ObjectMeta, specPath, options{resourceIsPod: true})...)

	if pod.Spec.ServiceAccountName == "" {
		for vi, v := range pod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for si, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	allErrs = append(allErrs, validateImagesTrimmed(pod.Spec.Containers, specPath.Child("containers"))...)
	allErrs = append(allErrs, validateImagesTrimmed(pod.Spec.InitContainers, specPath.Child("initContainers"))...)
	return allErrs
}

// ValidatePodCreate is ValidatePod plus the rules only a create has:
// ephemeral containers come only through the ephemeralcontainers
// subresource, and a pod with scheduling gates cannot be bound yet.
func ValidatePodCreate(pod *corev1.Pod) field.ErrorList {
	allErrs := ValidatePod(pod)
	specPath := field.NewPath("spec")
	if len(pod.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return allErrs
}

// ValidatePodUpdate checks a main-resource update of a Pod: the new pod is
// valid, its pod-specific annotations did not change in forbidden ways, and
// its spec changed only where ValidatePodSpecUpdate allows.
func ValidatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	allErrs := ValidatePod(newPod)
	allErrs = append(allErrs, validatePodAnnotationUpdates(newPod.Annotations, oldPod.Annotations, field.NewPath("metadata", "annotations"))...)
	allErrs = append(allErrs, ValidatePodSpecUpdate(&newPod.Spec, &oldPod.Spec, field.NewPath("spec"))...)
	return allErrs
}

func validateImagesTrimmed(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range containers {
		if len(c.Image) != len(strings.TrimSpace(c.Image)) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return allErrs
}

const (
	mirrorPodAnnotation    = "kubernetes.io/config.mirror"
	deletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
	seccompPodAnnotation   = "seccomp.security.alpha.kubernetes.io/pod"
	seccompCtrAnnotation   = "container.seccomp.security.alpha.kubernetes.io/"
	appArmorCtrAnnotation  = "container.apparmor.security.beta.kubernetes.io/"
)

func validatePodSpecificAnnotations(annotations map[string]string, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if v, ok := annotations[mirrorPodAnnotation]; ok && spec.NodeName == "" {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(mirrorPodAnnotation), v, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if v, ok := annotations[deletionCostAnnotation]; ok {
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(deletionCostAnnotation), v, "must be a 32bit integer"))
		}
	}
	if p, ok := annotations[seccompPodAnnotation]; ok {
		allErrs = append(allErrs, validateSeccompAnnotation(p, fldPath.Child(seccompPodAnnotation))...)
	}
	for k, p := range annotations {
		if strings.HasPrefix(k, seccompCtrAnnotation) {
			allErrs = append(allErrs, validateSeccompAnnotation(p, fldPath.Child(k))...)
		}
		if strings.HasPrefix(k, appArmorCtrAnnotation) {
			name := strings.TrimPrefix(k, appArmorCtrAnnotation)
			if !specHasContainer(spec, name) {
				allErrs = append(allErrs, field.Invalid(fldPath.Key(k), name, "container not found"))
			}
			if p != "" && p != "runtime/default" && p != "unconfined" && !strings.HasPrefix(p, "localhost/") {
				allErrs = append(allErrs, field.Invalid(fldPath.Key(k), p, "invalid AppArmor profile name: "+strconv.Quote(p)))
			}
		}
	}
	return allErrs
}

func validateSeccompAnnotation(p string, fldPath *field.Path) field.ErrorList {
	switch {
	case p == "runtime/default", p == "docker/default", p == "unconfined":
		return nil
	case strings.HasPrefix(p, "localhost/"):
		return validateLocalDescendingPath(strings.TrimPrefix(p, "localhost/"), fldPath)
	}
	return field.ErrorList{field.Invalid(fldPath, p, "must be a valid seccomp profile")}
}

func validatePodAnnotationUpdates(newA, oldA map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for k, ov := range oldA {
		if nv, ok := newA[k]; ok && nv == ov {
			continue
		}
		if strings.HasPrefix(k, appArmorCtrAnnotation) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Key(k), "may not remove or update AppArmor annotations"))
		}
		if k == mirrorPodAnnotation {
			allErrs = append(allErrs, field.Forbidden(fldPath.Key(k), "may not remove or update mirror pod annotation"))
		}
	}
	for k := range newA {
		if _, ok := oldA[k]; ok {
			continue
		}
		if strings.HasPrefix(k, appArmorCtrAnnotation) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Key(k), "may not add AppArmor annotations"))
		}
		if k == mirrorPodAnnotation {
			allErrs = append(allErrs, field.Forbidden(fldPath.Key(k), "may not add mirror pod annotation"))
		}
	}
	return allErrs
}

func specHasContainer(spec *corev1.PodSpec, name string) bool {
	found := false
	visitContainers(spec, func(c *corev1.Container, _ *field.Path) {
		if c.Name == name {
			found = true
		}
	}, field.NewPath("spec"))
	return found
}

// visitContainers calls fn for every init, regular and ephemeral container
// with its field path, in that order.
func visitContainers(spec *corev1.PodSpec, fn func(*corev1.Container, *field.Path), fldPath *field.Path) {
	for i := range spec.InitContainers {
		fn(&spec.InitContainers[i], fldPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], fldPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		fn((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), fldPath.Child("ephemeralContainers").Index(i))
	}
}

func validatePodSpec(spec *corev1.PodSpec, meta *metav1.ObjectMeta, fldPath *field.Path, opts options) field.ErrorList {
	var allErrs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	gracePeriod := spec.TerminationGracePeriodSeconds
	hostUsers := spec.HostUsers == nil || *spec.HostUsers

	vols, vErrs := validateVolumes(spec.Volumes, meta, fldPath.Child("volumes"), opts)
	allErrs = append(allErrs, vErrs...)
	claimNames := sets.New[string]()
	for _, c := range spec.ResourceClaims {
		if c.Name != "" {
			claimNames.Insert(c.Name)
		}
	}
	allErrs = append(allErrs, validatePodResourceClaims(spec.ResourceClaims, fldPath.Child("resourceClaims"))...)
	allErrs = append(allErrs, validateContainers(spec.Containers, vols, claimNames, gracePeriod, fldPath.Child("containers"), spec.RestartPolicy, hostUsers)...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, spec.Containers, vols, claimNames, gracePeriod, fldPath.Child("initContainers"), spec.RestartPolicy, hostUsers)...)
	allErrs = append(allErrs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, vols, claimNames, fldPath.Child("ephemeralContainers"), spec.RestartPolicy, hostUsers)...)
	allErrs = append(allErrs, validatePodResources(spec, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateHostNetworkPorts(spec, fldPath, opts)...)
	allErrs = append(allErrs, validateEnum(spec.RestartPolicy, fldPath.Child("restartPolicy"),
		[]corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})...)
	allErrs = append(allErrs, validateEnum(spec.DNSPolicy, fldPath.Child("dnsPolicy"),
		[]corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone})...)
	allErrs = append(allErrs, metavalidation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, validatePodSecurityContext(spec, fldPath.Child("securityContext"))...)
	allErrs = append(allErrs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	allErrs = append(allErrs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		allErrs = append(allErrs, validateQualifiedName(string(g.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	allErrs = append(allErrs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)
	allErrs = append(allErrs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	allErrs = append(allErrs, validateHostUsers(spec, fldPath)...)
	if spec.ServiceAccountName != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(spec.ServiceAccountName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	if spec.NodeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.NodeName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeName"), spec.NodeName, msg))
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		allErrs = append(allErrs, ValidateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		allErrs = append(allErrs, ValidateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	if len(spec.Tolerations) > 0 {
		allErrs = append(allErrs, ValidateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	}
	for i, ha := range spec.HostAliases {
		allErrs = append(allErrs, validation.IsValidIP(fldPath.Child("hostAliases").Index(i).Child("ip"), ha.IP)...)
		for j, h := range ha.Hostnames {
			allErrs = append(allErrs, ValidateDNS1123Subdomain(h, fldPath.Child("hostAliases").Index(i).Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.PriorityClassName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("priorityClassName"), spec.PriorityClassName, msg))
		}
	}
	if spec.RuntimeClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.RuntimeClassName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("runtimeClassName"), *spec.RuntimeClassName, msg))
		}
	}
	if spec.PreemptionPolicy != nil {
		allErrs = append(allErrs, validateEnum(*spec.PreemptionPolicy, fldPath.Child("preemptionPolicy"),
			[]corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever})...)
	}
	if spec.Overhead != nil {
		allErrs = append(allErrs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, ValidateContainerResourceName, nil, fldPath.Child("overhead"))...)
	}
	if spec.OS != nil {
		allErrs = append(allErrs, validateOS(spec, fldPath)...)
	}
	return allErrs
}

// validateEnum reports Required for "" and NotSupported for a value outside
// valid, upstream's pattern for the pod's enum fields.
func validateEnum[T ~string](v T, fldPath *field.Path, valid []T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, s := range valid {
		if v == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, v, valid)}
}

func validateHostNetworkPorts(spec *corev1.PodSpec, fldPath *field.Path, opts options) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var allErrs field.ErrorList
	for i, c := range spec.Containers {
		for j, p := range c.Ports {
			if (opts.resourceIsPod || p.HostPort != 0) && p.HostPort != p.ContainerPort {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return allErrs
}

func validateHostUsers(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var allErrs field.ErrorList
	if spec.HostNetwork {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostNetwork"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostPID {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("HostPID"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostIPC {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("HostIPC"), "when `pod.Spec.HostUsers` is false"))
	}
	return allErrs
}

func validateSchedulingGates(gates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, g := range gates {
		allErrs = append(allErrs, validateQualifiedName(g.Name, fldPath.Index(i))...)
		if seen.Has(g.Name) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), g.Name))
		}
		seen.Insert(g.Name)
	}
	return allErrs
}

func validatePodResourceClaims(claims []corev1.PodResourceClaim, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, c := range claims {
		p := fldPath.Index(i)
		switch {
		case c.Name == "":
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		case names.Has(c.Name):
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), c.Name))
		default:
			allErrs = append(allErrs, ValidateDNS1123Label(c.Name, p.Child("name"))...)
			names.Insert(c.Name)
		}
		if c.ResourceClaimName != nil && c.ResourceClaimTemplateName != nil {
			allErrs = append(allErrs, field.Invalid(p, c, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		}
		if c.ResourceClaimName == nil && c.ResourceClaimTemplateName == nil {
			allErrs = append(allErrs, field.Invalid(p, c, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if c.ResourceClaimName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*c.ResourceClaimName, false) {
				allErrs = append(allErrs, field.Invalid(p.Child("resourceClaimName"), *c.ResourceClaimName, msg))
			}
		}
		if c.ResourceClaimTemplateName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*c.ResourceClaimTemplateName, false) {
				allErrs = append(allErrs, field.Invalid(p.Child("resourceClaimTemplateName"), *c.ResourceClaimTemplateName, msg))
			}
		}
	}
	return allErrs
}

func validateOS(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	osPath := fldPath.Child("os")
	if spec.OS.Name == "" {
		return field.ErrorList{field.Required(osPath.Child("name"), "cannot be empty")}
	}
	switch spec.OS.Name {
	case corev1.Linux:
		return validateLinuxPod(spec, fldPath)
	case corev1.Windows:
		return validateWindowsPod(spec, fldPath)
	}
	return field.ErrorList{field.NotSupported(osPath, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows})}
}

func validateLinuxPod(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
	}
	visitContainers(spec, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
		}
	}, fldPath)
	return allErrs
}

func validateWindowsPod(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	const msg = "cannot be set for a windows pod"
	var allErrs field.ErrorList
	forbid := func(set bool, p *field.Path) {
		if set {
			allErrs = append(allErrs, field.Forbidden(p, msg))
		}
	}
	scPath := fldPath.Child("securityContext")
	if sc := spec.SecurityContext; sc != nil {
		forbid(sc.AppArmorProfile != nil, scPath.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, scPath.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, scPath.Child("seccompProfile"))
		forbid(sc.FSGroup != nil, scPath.Child("fsGroup"))
		forbid(sc.FSGroupChangePolicy != nil, scPath.Child("fsGroupChangePolicy"))
		forbid(len(sc.Sysctls) > 0, scPath.Child("sysctls"))
		forbid(sc.RunAsUser != nil, scPath.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, scPath.Child("runAsGroup"))
		forbid(sc.SupplementalGroups != nil, scPath.Child("supplementalGroups"))
		forbid(sc.SupplementalGroupsPolicy != nil, scPath.Child("supplementalGroupsPolicy"))
		forbid(sc.SELinuxChangePolicy != nil, scPath.Child("seLinuxChangePolicy"))
	}
	forbid(spec.HostUsers != nil, fldPath.Child("hostUsers"))
	forbid(spec.HostPID, fldPath.Child("hostPID"))
	forbid(spec.HostIPC, fldPath.Child("hostIPC"))
	forbid(spec.ShareProcessNamespace != nil, fldPath.Child("shareProcessNamespace"))
	visitContainers(spec, func(c *corev1.Container, p *field.Path) {
		sc := c.SecurityContext
		if sc == nil {
			return
		}
		p = p.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, p.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, p.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, p.Child("seccompProfile"))
		forbid(sc.Capabilities != nil, p.Child("capabilities"))
		forbid(sc.ReadOnlyRootFilesystem != nil, p.Child("readOnlyRootFilesystem"))
		forbid(sc.Privileged != nil, p.Child("privileged"))
		forbid(sc.AllowPrivilegeEscalation != nil, p.Child("allowPrivilegeEscalation"))
		forbid(sc.ProcMount != nil, p.Child("procMount"))
		forbid(sc.RunAsUser != nil, p.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, p.Child("runAsGroup"))
	}, fldPath)
	return allErrs
}

// ValidateDNS1123Label reports v when it is not a DNS label, with upstream's messages.
func ValidateDNS1123Label(v string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
	}
	return allErrs
}

// ValidateDNS1123Subdomain reports v when it is not a DNS subdomain, with upstream's messages.
func ValidateDNS1123Subdomain(v string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
	}
	return allErrs
}

func validateQualifiedName(v string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
	}
	return allErrs
}
