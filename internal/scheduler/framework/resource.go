package framework

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Score bounds: every score plugin's normalized score is in
// [MinNodeScore, MaxNodeScore] before its weight is applied.
const (
	MaxNodeScore int64 = 100
	MinNodeScore int64 = 0
)

// Requests assumed for a container that requests no CPU or memory, when
// spreading by resource use (upstream's non-zero defaults).
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// Resource is an amount of each schedulable resource: CPU in millicores,
// memory and ephemeral storage in bytes, a pod count, and the scalar
// resources (extended resources, hugepages, attachable volumes).
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	AllowedPodNumber int
	ScalarResources  map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds a ResourceList.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += int(q.Value())
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddScalar adds to one scalar resource.
func (r *Resource) AddScalar(name v1.ResourceName, v int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = map[v1.ResourceName]int64{}
	}
	r.ScalarResources[name] += v
}

// AddResource adds o to r (sign -1 subtracts).
func (r *Resource) AddResource(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += int(sign) * o.AllowedPodNumber
	for name, v := range o.ScalarResources {
		r.AddScalar(name, sign*v)
	}
}

// Clone returns a deep copy.
func (r *Resource) Clone() *Resource {
	c := *r
	if r.ScalarResources != nil {
		c.ScalarResources = make(map[v1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			c.ScalarResources[k] = v
		}
	}
	return &c
}

// IsZero reports that nothing is requested.
func (r *Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 {
		return false
	}
	for _, v := range r.ScalarResources {
		if v != 0 {
			return false
		}
	}
	return true
}

// Get returns the amount of one resource (CPU in millicores).
func (r *Resource) Get(name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return int64(r.AllowedPodNumber)
	}
	return r.ScalarResources[name]
}

// PodRequests is what a pod requests, as upstream computes it for
// scheduling: the sum of its containers, or the largest init container
// where that is more (restartable init containers, sidecars, count
// alongside the containers), plus the pod overhead; pod-level resources
// win where set. With nonZero, a container that requests no CPU or memory
// counts as requesting DefaultMilliCPURequest and DefaultMemoryRequest.
func PodRequests(pod *v1.Pod, nonZero bool) *Resource {
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	if nonZero {
		opts.NonMissingContainerRequests = v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.DecimalSI),
		}
	}
	return NewResource(resourcehelper.PodRequests(pod, opts))
}

// IsNativeResource reports names in the kubernetes.io namespace or without
// a domain.
func IsNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || IsPrefixedNativeResource(name)
}

// IsPrefixedNativeResource reports names containing "kubernetes.io/".
func IsPrefixedNativeResource(name v1.ResourceName) bool {
	return strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix)
}

// IsExtendedResourceName reports a resource outside the kubernetes.io
// namespace, such as example.com/gpu.
func IsExtendedResourceName(name v1.ResourceName) bool {
	if IsNativeResource(name) || strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(fmt.Sprintf("%s%s", v1.DefaultResourceRequestsPrefix, name))) == 0
}

// IsScalarResourceName reports extended resources, hugepages, attachable
// volumes and other prefixed native resources: those counted as plain
// integers.
func IsScalarResourceName(name v1.ResourceName) bool {
	return IsExtendedResourceName(name) || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) ||
		IsPrefixedNativeResource(name) || strings.HasPrefix(string(name), v1.ResourceAttachableVolumesPrefix)
}
