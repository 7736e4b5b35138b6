package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	standardResources = sets.New(
		"cpu", "memory", "ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage",
		"limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
		"persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers",
		"storage", "requests.storage",
	)
	standardQuotaResources = sets.New(
		"cpu", "memory", "ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
		"limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
		"persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers",
	)
	standardContainerResources = sets.New("cpu", "memory", "ephemeral-storage")
	integerResources           = sets.New("pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
		"configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers")
	standardLimitRangeTypes = sets.New("Pod", "Container", "PersistentVolumeClaim")
)

// IsHugePageResourceName reports a "hugepages-<size>" resource.
func IsHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isQuotaHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// IsNativeResource reports a resource in the kubernetes.io namespace
// (unprefixed or *kubernetes.io/).
func IsNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// IsExtendedResourceName reports a fully qualified, non-native resource
// (e.g. example.com/gpu) that can also be quota'd as requests.<name>.
func IsExtendedResourceName(name corev1.ResourceName) bool {
	if IsNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// IsOvercommitAllowed: requests may be below limits (native, non-hugepage resources).
func IsOvercommitAllowed(name corev1.ResourceName) bool {
	return IsNativeResource(name) && !IsHugePageResourceName(name)
}

// IsStandardResourceName reports a resource name Kubernetes itself defines.
func IsStandardResourceName(name corev1.ResourceName) bool {
	return standardResources.Has(string(name)) || isQuotaHugePageResourceName(name)
}

// IsStandardQuotaResourceName reports a resource name a ResourceQuota may limit without a prefix.
func IsStandardQuotaResourceName(name corev1.ResourceName) bool {
	return standardQuotaResources.Has(string(name)) || isQuotaHugePageResourceName(name)
}

// IsIntegerResourceName reports resources whose quantities must be whole numbers.
func IsIntegerResourceName(name corev1.ResourceName) bool {
	return integerResources.Has(string(name)) || IsExtendedResourceName(name)
}

// ValidateResourceName checks a compute resource name: a qualified name, and
// if unprefixed a standard one.
func ValidateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	if len(allErrs) != 0 {
		return allErrs
	}
	if !strings.Contains(string(name), "/") && !IsStandardResourceName(name) {
		return append(allErrs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	return allErrs
}

// ValidateContainerResourceName checks a resource name in a container's
// requests or limits.
func ValidateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := ValidateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if !standardContainerResources.Has(string(name)) && !IsHugePageResourceName(name) {
			return append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !IsNativeResource(name) && !IsExtendedResourceName(name) {
		return append(allErrs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

// ValidateResourceQuotaResourceName checks a resource name in a quota.
func ValidateResourceQuotaResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := ValidateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") && !IsStandardQuotaResourceName(name) {
		return append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for quota"))
	}
	return allErrs
}

// ValidateLimitRangeTypeName checks a LimitRange item's type.
func ValidateLimitRangeTypeName(t corev1.LimitType, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(t)) {
		allErrs = append(allErrs, field.Invalid(fldPath, t, msg))
	}
	if len(allErrs) != 0 {
		return allErrs
	}
	if !strings.Contains(string(t), "/") && !standardLimitRangeTypes.Has(string(t)) {
		return append(allErrs, field.Invalid(fldPath, t, "must be a standard limit type or fully qualified"))
	}
	return allErrs
}

// ValidateResourceQuantityValue checks that a quantity is non-negative and,
// for integer resources, whole.
func ValidateResourceQuantityValue(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	allErrs := ValidateNonnegativeQuantity(q, fldPath)
	if IsIntegerResourceName(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q, "must be an integer"))
	}
	return allErrs
}

// ValidateNonnegativeQuantity reports a negative quantity with upstream's message.
func ValidateNonnegativeQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Cmp(resource.Quantity{}) < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), apivalidation.IsNegativeErrorMsg)}
	}
	return nil
}

// ValidatePositiveQuantityValue reports a quantity that is not above zero.
func ValidatePositiveQuantityValue(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Cmp(resource.Quantity{}) <= 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), "must be greater than zero")}
	}
	return nil
}

func hugePageSize(name corev1.ResourceName) (resource.Quantity, error) {
	if !IsHugePageResourceName(name) {
		return resource.Quantity{}, fmt.Errorf("resource %q is not hugepage", name)
	}
	return resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
}

func validateHugePageValue(name corev1.ResourceName, q resource.Quantity) error {
	size, err := hugePageSize(name)
	if err != nil || size.Value() <= 0 || q.Value()%size.Value() != 0 {
		return fmt.Errorf("%s is not positive integer multiple of %s", q.String(), name)
	}
	return nil
}

func validateResourceRequirements(r *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, claims sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	limCPUMem, reqCPUMem, limHuge, reqHuge := false, false, false, false
	for name, q := range r.Limits {
		p := limPath.Key(string(name))
		allErrs = append(allErrs, nameFn(name, p)...)
		allErrs = append(allErrs, ValidateResourceQuantityValue(name, q, p)...)
		if IsHugePageResourceName(name) {
			limHuge = true
			if err := validateHugePageValue(name, q); err != nil {
				allErrs = append(allErrs, field.Invalid(p, q.String(), err.Error()))
			}
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			limCPUMem = true
		}
	}
	for name, q := range r.Requests {
		p := reqPath.Key(string(name))
		allErrs = append(allErrs, nameFn(name, p)...)
		allErrs = append(allErrs, ValidateResourceQuantityValue(name, q, p)...)
		if lim, ok := r.Limits[name]; ok {
			if q.Cmp(lim) != 0 && !IsOvercommitAllowed(name) {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
			} else if q.Cmp(lim) > 0 {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		} else if !IsOvercommitAllowed(name) {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if IsHugePageResourceName(name) {
			reqHuge = true
			if err := validateHugePageValue(name, q); err != nil {
				allErrs = append(allErrs, field.Invalid(p, q.String(), err.Error()))
			}
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			reqCPUMem = true
		}
	}
	if !limCPUMem && !reqCPUMem && (reqHuge || limHuge) {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	allErrs = append(allErrs, validateResourceClaimNames(r.Claims, claims, fldPath.Child("claims"))...)
	return allErrs
}

func validateResourceClaimNames(claims []corev1.ResourceClaim, podClaims sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, c := range claims {
		p := fldPath.Index(i)
		if c.Name == "" {
			allErrs = append(allErrs, field.Required(p, ""))
			continue
		}
		key := c.Name
		if c.Request != "" {
			allErrs = append(allErrs, ValidateDNS1123Label(c.Request, p.Child("request"))...)
			key += "/" + c.Request
		}
		if seen.Has(key) || (c.Request != "" && seen.Has(c.Name)) {
			allErrs = append(allErrs, field.Duplicate(p, key))
		}
		seen.Insert(key)
		if !podClaims.Has(c.Name) {
			e := field.NotFound(p, c.Name)
			e.Detail = "must be one of the names in pod.spec.resourceClaims"
			if podClaims.Len() == 0 {
				e.Detail += " which is empty"
			} else {
				e.Detail += ": " + strings.Join(sets.List(podClaims), ", ")
			}
			allErrs = append(allErrs, e)
		}
	}
	return allErrs
}

var supportedPodLevelResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// validatePodResources checks pod-level resources (spec.resources): names,
// quantities, requests ≤ limits, and consistency with container values.
func validatePodResources(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.Resources == nil {
		return nil
	}
	var allErrs field.ErrorList
	if spec.Resources.Claims != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	nameFn := func(name corev1.ResourceName, p *field.Path) field.ErrorList {
		errs := ValidateResourceName(name, p)
		if len(errs) != 0 {
			return errs
		}
		if !contains(supportedPodLevelResources, name) && !IsHugePageResourceName(name) {
			valid := append([]corev1.ResourceName{}, supportedPodLevelResources...)
			valid = append(valid, "hugepages-*")
			return append(errs, field.NotSupported(p, name, valid))
		}
		return nil
	}
	allErrs = append(allErrs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Resources.Limits, Requests: spec.Resources.Requests}, nameFn, nil, fldPath)...)

	// Pod-level requests must cover the containers' aggregate requests, and
	// no container limit may exceed the pod-level limit.
	agg := AggregateContainerRequests(spec)
	for name, ctr := range agg {
		podReq, ok := spec.Resources.Requests[name]
		if !ok {
			continue
		}
		if ctr.Cmp(podReq) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("requests").Key(string(name)), podReq.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", ctr.String())))
		}
	}
	for i, c := range spec.Containers {
		for name, lim := range c.Resources.Limits {
			podLim, ok := spec.Resources.Limits[name]
			if ok && lim.Cmp(podLim) > 0 {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Key(string(name)).Child("limits"), lim.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", podLim.String())))
			}
		}
	}
	return allErrs
}

// AggregateContainerRequests sums the effective requests of a pod's
// containers the way the scheduler does: regular containers and sidecars
// (restartable init containers) add up, and each plain init container, which
// runs alone alongside the sidecars started before it, raises the total to
// its own need if that is larger.
func AggregateContainerRequests(spec *corev1.PodSpec) corev1.ResourceList {
	return aggregate(spec, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
}

// AggregateContainerLimits is AggregateContainerRequests over limits.
func AggregateContainerLimits(spec *corev1.PodSpec) corev1.ResourceList {
	return aggregate(spec, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
}

func aggregate(spec *corev1.PodSpec, get func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	add := func(dst, src corev1.ResourceList) {
		for n, q := range src {
			v := dst[n]
			v.Add(q)
			dst[n] = v
		}
	}
	for i := range spec.Containers {
		add(total, get(&spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(sidecars, get(c))
			add(total, get(c))
			continue
		}
		need := corev1.ResourceList{}
		add(need, get(c))
		add(need, sidecars)
		for n, q := range need {
			if cur, ok := initMax[n]; !ok || q.Cmp(cur) > 0 {
				initMax[n] = q.DeepCopy()
			}
		}
	}
	for n, q := range initMax {
		if cur, ok := total[n]; !ok || q.Cmp(cur) > 0 {
			total[n] = q.DeepCopy()
		}
	}
	return total
}
