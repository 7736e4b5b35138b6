package resource

import (
	"context"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func resourceClaims() registry.Resource {
	return registry.Resource{
		Kind:                resourcev1.SchemeGroupVersion.WithKind("ResourceClaim"),
		Plural:              "resourceclaims",
		ReturnDeletedObject: true,
		Singular:            "resourceclaim",
		Namespaced:          true,
		Subresources:        []string{"status"},
		Parts:               map[string]registry.Part{"status": {Merge: mergeClaimStatus}},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultDeviceClaim(&obj.(*resourcev1.ResourceClaim).Spec.Devices) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				c := obj.(*resourcev1.ResourceClaim)
				c.Status = resourcev1.ResourceClaimStatus{}
				dropDisabledClaimFields(&c.Spec.Devices)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateDeviceClaim(&obj.(*resourcev1.ResourceClaim).Spec.Devices, field.NewPath("spec", "devices"))
			},
			// The spec never changes: an update is checked for that alone,
			// as upstream's (the user cannot fix anything else in it).
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				c, o := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
				return apivalidation.ValidateImmutableField(c.Spec, o.Spec, field.NewPath("spec"))
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				c, o := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
				return validateClaimStatus(c, &o.Status)
			},
		},
	}
}

func resourceClaimTemplates() registry.Resource {
	return registry.Resource{
		Kind:                resourcev1.SchemeGroupVersion.WithKind("ResourceClaimTemplate"),
		Plural:              "resourceclaimtemplates",
		ReturnDeletedObject: true,
		Singular:            "resourceclaimtemplate",
		Namespaced:          true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				defaultDeviceClaim(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec.Devices)
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				dropDisabledClaimFields(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec.Devices)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := &obj.(*resourcev1.ResourceClaimTemplate).Spec
				sp := field.NewPath("spec")
				errs := podspec.ValidateTemplateObjectMeta(&s.ObjectMeta, sp.Child("metadata"))
				return append(errs, validateDeviceClaim(&s.Spec.Devices, sp.Child("spec", "devices"))...)
			},
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				t, o := obj.(*resourcev1.ResourceClaimTemplate), old.(*resourcev1.ResourceClaimTemplate)
				return apivalidation.ValidateImmutableField(t.Spec, o.Spec, field.NewPath("spec"))
			},
		},
	}
}

// mergeClaimStatus is what a /status write may change (the status,
// annotations, finalizers and owners), without the fields of features
// upstream leaves off; the statuses of devices that the write deallocates
// go with their allocation, as upstream drops them.
func mergeClaimStatus(obj, old runtime.Object) runtime.Object {
	c, o := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
	out := o.DeepCopy()
	out.Status = *c.Status.DeepCopy()
	out.Annotations, out.Finalizers, out.OwnerReferences = c.Annotations, c.Finalizers, c.OwnerReferences
	dropDisabledClaimStatusFields(&out.Status, &o.Status)
	gone := map[string]bool{}
	if o.Status.Allocation != nil {
		for _, r := range o.Status.Allocation.Devices.Results {
			gone[deviceID(r.Driver, r.Pool, r.Device, (*string)(r.ShareID))] = true
		}
	}
	if out.Status.Allocation != nil {
		for _, r := range out.Status.Allocation.Devices.Results {
			delete(gone, deviceID(r.Driver, r.Pool, r.Device, (*string)(r.ShareID)))
		}
	}
	kept := out.Status.Devices[:0]
	for _, d := range out.Status.Devices {
		if !gone[deviceID(d.Driver, d.Pool, d.Device, d.ShareID)] {
			kept = append(kept, d)
		}
	}
	out.Status.Devices = kept
	if len(kept) == 0 {
		out.Status.Devices = nil
	}
	return out
}

// defaultDeviceClaim: a request that says no allocation mode asks for
// exactly one device.
func defaultDeviceClaim(d *resourcev1.DeviceClaim) {
	def := func(mode *resourcev1.DeviceAllocationMode, count *int64) {
		if *mode == "" {
			*mode = resourcev1.DeviceAllocationModeExactCount
		}
		if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range d.Requests {
		r := &d.Requests[i]
		if r.Exactly != nil {
			def(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			def(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}

// requestNames maps each request of a claim to the names of its
// subrequests (nil for a request of exactly one kind of device).
type requestNames map[string]map[string]bool

func requestsOf(d *resourcev1.DeviceClaim) requestNames {
	names := requestNames{}
	for _, r := range d.Requests {
		var subs map[string]bool
		if len(r.FirstAvailable) > 0 {
			subs = map[string]bool{}
			for _, s := range r.FirstAvailable {
				subs[s.Name] = true
			}
		}
		names[r.Name] = subs
	}
	return names
}

// has reports whether ref names a request, or a request and one of its
// subrequests separated by "/".
func (r requestNames) has(ref string) bool {
	req, sub, nested := strings.Cut(ref, "/")
	subs, ok := r[req]
	if !ok {
		return false
	}
	return !nested || subs[sub]
}

func (r requestNames) validateRef(ref string, p *field.Path) field.ErrorList {
	segments := strings.Split(ref, "/")
	if len(segments) > 2 {
		return field.ErrorList{field.Invalid(p, ref, requestRefMsg)}
	}
	var errs field.ErrorList
	for _, s := range segments {
		errs = append(errs, dnsLabel(s, p)...)
	}
	if !r.has(ref) {
		errs = append(errs, field.Invalid(p, ref, requestRefMsg))
	}
	return errs
}

func (r requestNames) validateRefs(refs []string, p *field.Path) field.ErrorList {
	return eachUnique(refs, resourcev1.DeviceRequestsMaxSize, p, strKey, r.validateRef)
}

// claimCheck carries what the checks of one claim's requests share: the
// attributes its constraints name, by the request (or "request/subrequest",
// or "" for all requests) they apply to, and the cost of its derived
// attribute expressions so far.
type claimCheck struct {
	constrained map[string]map[string]bool
	derivedCost uint64
}

func validateDeviceClaim(d *resourcev1.DeviceClaim, p *field.Path) field.ErrorList {
	names := requestsOf(d)
	check := &claimCheck{constrained: map[string]map[string]bool{}}
	for _, c := range d.Constraints {
		var attr string
		switch {
		case c.MatchAttribute != nil:
			attr = string(*c.MatchAttribute)
		case c.DistinctAttribute != nil:
			attr = string(*c.DistinctAttribute)
		default:
			continue
		}
		targets := c.Requests
		if len(targets) == 0 {
			targets = []string{""}
		}
		for _, r := range targets {
			if check.constrained[r] == nil {
				check.constrained[r] = map[string]bool{}
			}
			check.constrained[r][attr] = true
		}
	}
	errs := eachUnique(d.Requests, resourcev1.DeviceRequestsMaxSize, p.Child("requests"),
		func(r resourcev1.DeviceRequest) string { return r.Name }, check.validateDeviceRequest)
	errs = append(errs, eachItem(d.Constraints, maxDeviceConstraints, p.Child("constraints"),
		func(c resourcev1.DeviceConstraint, p *field.Path) field.ErrorList {
			errs := names.validateRefs(c.Requests, p.Child("requests"))
			switch {
			case c.MatchAttribute != nil:
				errs = append(errs, validateFullyQualifiedName(string(*c.MatchAttribute), p.Child("matchAttribute"))...)
			case c.DistinctAttribute != nil:
				errs = append(errs, validateFullyQualifiedName(string(*c.DistinctAttribute), p.Child("distinctAttribute"))...)
			default:
				errs = append(errs, field.Required(p.Child("matchAttribute"), ""))
			}
			return errs
		})...)
	errs = append(errs, eachItem(d.Config, maxDeviceConfigs, p.Child("config"),
		func(c resourcev1.DeviceClaimConfiguration, p *field.Path) field.ErrorList {
			errs := names.validateRefs(c.Requests, p.Child("requests"))
			return append(errs, validateDeviceConfiguration(c.DeviceConfiguration, false, p)...)
		})...)
	if check.derivedCost > resourcev1.DeviceClaimDerivedAttributeCELMaxCost {
		errs = append(errs, field.Forbidden(p, "too complex, total cost of derived attribute CEL expressions in the claim exceeds cost limit"))
	}
	return errs
}

func (c *claimCheck) validateDeviceRequest(r resourcev1.DeviceRequest, p *field.Path) field.ErrorList {
	errs := dnsLabel(r.Name, p.Child("name"))
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		errs = append(errs, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		errs = append(errs, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e, ep := r.Exactly, p.Child("exactly")
		errs = append(errs, validateDeviceClassRef(e.DeviceClassName, ep.Child("deviceClassName"))...)
		errs = append(errs, validateSelectors(e.Selectors, false, ep.Child("selectors"))...)
		errs = append(errs, c.validateDerivedAttributes(e.DerivedAttributes, r.Name, ep.Child("derivedAttributes"))...)
		errs = append(errs, validateAllocationMode(e.AllocationMode, e.Count, ep)...)
		errs = append(errs, validateTolerations(e.Tolerations, ep.Child("tolerations"))...)
	default:
		errs = append(errs, eachUnique(r.FirstAvailable, maxFirstAvailable, p.Child("firstAvailable"),
			func(s resourcev1.DeviceSubRequest) string { return s.Name },
			func(s resourcev1.DeviceSubRequest, sp *field.Path) field.ErrorList {
				errs := dnsLabel(s.Name, sp.Child("name"))
				errs = append(errs, validateDeviceClassRef(s.DeviceClassName, sp.Child("deviceClassName"))...)
				errs = append(errs, validateSelectors(s.Selectors, false, sp.Child("selectors"))...)
				errs = append(errs, c.validateDerivedAttributes(s.DerivedAttributes, r.Name+"/"+s.Name, sp.Child("derivedAttributes"))...)
				errs = append(errs, validateAllocationMode(s.AllocationMode, s.Count, sp)...)
				return append(errs, validateTolerations(s.Tolerations, sp.Child("tolerations"))...)
			})...)
	}
	return errs
}

// validateDerivedAttributes: at most 32 distinct, fully qualified names,
// each used by a constraint on the request (a subrequest's: on it or its
// request), each computed by a CEL expression within the cost limit.
func (c *claimCheck) validateDerivedAttributes(attrs []resourcev1.DeviceDerivedAttribute, request string, p *field.Path) field.ErrorList {
	parent, _, _ := strings.Cut(request, "/")
	used := func(name string) bool {
		return c.constrained[""][name] || c.constrained[request][name] || c.constrained[parent][name]
	}
	return eachUnique(attrs, maxDerivedAttributes, p,
		func(a resourcev1.DeviceDerivedAttribute) string { return string(a.Name) },
		func(a resourcev1.DeviceDerivedAttribute, ap *field.Path) field.ErrorList {
			var errs field.ErrorList
			np := ap.Child("name")
			if a.Name == "" {
				errs = append(errs, field.Required(np, ""))
			} else {
				errs = append(errs, validateFullyQualifiedName(string(a.Name), np)...)
				if !used(string(a.Name)) {
					errs = append(errs, field.Invalid(np, a.Name, "must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request"))
				}
			}
			xp := ap.Child("expression")
			if a.Expression == "" {
				return append(errs, field.Required(xp, ""))
			}
			cost, cerrs := compileCEL(a.Expression, true, xp)
			c.derivedCost += cost
			return append(errs, cerrs...)
		})
}

var allocationModes = []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}

func validateAllocationMode(mode resourcev1.DeviceAllocationMode, count int64, p *field.Path) field.ErrorList {
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode))}
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, "must be greater than zero")}
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("allocationMode"), mode, allocationModes)}
	}
	return nil
}

// validateClaimStatus checks a status write: consumers with resource,
// name and uid, reservations only of an allocated claim (and none added
// once it is being deleted), an allocation that is valid when set and
// never changes afterwards, and device statuses only of allocated devices.
func validateClaimStatus(c *resourcev1.ResourceClaim, old *resourcev1.ResourceClaimStatus) field.ErrorList {
	s, sp := &c.Status, field.NewPath("status")
	rp := sp.Child("reservedFor")
	errs := eachUnique(s.ReservedFor, resourcev1.ResourceClaimReservedForMaxSize, rp,
		func(r resourcev1.ResourceClaimConsumerReference) types.UID { return r.UID },
		func(r resourcev1.ResourceClaimConsumerReference, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			for _, f := range []struct{ name, value string }{{"resource", r.Resource}, {"name", r.Name}, {"uid", string(r.UID)}} {
				if f.value == "" {
					errs = append(errs, field.Required(p.Child(f.name), ""))
				}
			}
			return errs
		})

	allocated := map[string]bool{}
	if s.Allocation != nil {
		for _, r := range s.Allocation.Devices.Results {
			allocated[deviceID(r.Driver, r.Pool, r.Device, (*string)(r.ShareID))] = true
		}
	}
	errs = append(errs, eachUnique(s.Devices, -1, sp.Child("devices"),
		func(d resourcev1.AllocatedDeviceStatus) string {
			return deviceID(d.Driver, d.Pool, d.Device, d.ShareID)
		},
		func(d resourcev1.AllocatedDeviceStatus, p *field.Path) field.ErrorList {
			return validateDeviceStatus(d, allocated, p)
		})...)

	if len(s.ReservedFor) > 0 {
		if s.Allocation == nil {
			errs = append(errs, field.Forbidden(rp, "may not be specified when `allocated` is not set"))
		} else if c.DeletionTimestamp != nil {
			before := map[resourcev1.ResourceClaimConsumerReference]bool{}
			for _, r := range old.ReservedFor {
				before[r] = true
			}
			for _, r := range s.ReservedFor {
				if !before[r] {
					errs = append(errs, field.Forbidden(rp, "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"))
					break
				}
			}
		}
	}

	ap := sp.Child("allocation")
	switch {
	case old.Allocation != nil && s.Allocation != nil:
		errs = append(errs, apivalidation.ValidateImmutableField(s.Allocation, old.Allocation, ap)...)
	case s.Allocation != nil:
		errs = append(errs, validateAllocation(s.Allocation, requestsOf(&c.Spec.Devices), ap)...)
	}
	return errs
}

// deviceID names one allocated device (and its share) as upstream prints it.
func deviceID(driver, pool, device string, shareID *string) string {
	id := driver + "/" + pool + "/" + device
	if shareID != nil {
		id += "/" + *shareID
	}
	return id
}

var configSources = []resourcev1.AllocationConfigSource{resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass}

func validateAllocation(a *resourcev1.AllocationResult, names requestNames, p *field.Path) field.ErrorList {
	dp := p.Child("devices")
	errs := eachItem(a.Devices.Results, resourcev1.AllocationResultsMaxSize, dp.Child("results"),
		func(r resourcev1.DeviceRequestAllocationResult, p *field.Path) field.ErrorList {
			errs := names.validateRef(r.Request, p.Child("request"))
			errs = append(errs, validateDriverName(r.Driver, p.Child("driver"))...)
			errs = append(errs, validatePoolName(r.Pool, p.Child("pool"))...)
			errs = append(errs, dnsLabel(r.Device, p.Child("device"))...)
			errs = append(errs, validateBindingConditions(r.BindingConditions, r.BindingFailureConditions, p)...)
			errs = append(errs, validateTolerations(r.Tolerations, p.Child("tolerations"))...)
			if r.ShareID != nil {
				errs = append(errs, validateUID(string(*r.ShareID), p.Child("shareID"))...)
			}
			return errs
		})
	errs = append(errs, eachItem(a.Devices.Config, 2*maxDeviceConfigs, dp.Child("config"),
		func(c resourcev1.DeviceAllocationConfiguration, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			switch c.Source {
			case "":
				errs = append(errs, field.Required(p.Child("source"), ""))
			case resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass:
			default:
				errs = append(errs, field.NotSupported(p.Child("source"), c.Source, configSources))
			}
			errs = append(errs, names.validateRefs(c.Requests, p.Child("requests"))...)
			return append(errs, validateDeviceConfiguration(c.DeviceConfiguration, false, p)...)
		})...)
	if a.NodeSelector != nil {
		errs = append(errs, podspec.ValidateNodeSelector(a.NodeSelector, false, p.Child("nodeSelector"))...)
	}
	return errs
}

func validateDeviceStatus(d resourcev1.AllocatedDeviceStatus, allocated map[string]bool, p *field.Path) field.ErrorList {
	errs := validateDriverName(d.Driver, p.Child("driver"))
	errs = append(errs, validatePoolName(d.Pool, p.Child("pool"))...)
	errs = append(errs, dnsLabel(d.Device, p.Child("device"))...)
	if d.ShareID != nil {
		errs = append(errs, validateUID(*d.ShareID, p.Child("shareID"))...)
	}
	if id := deviceID(d.Driver, d.Pool, d.Device, d.ShareID); !allocated[id] {
		errs = append(errs, field.Invalid(p, id, "must be an allocated device in the claim"))
	}
	cp := p.Child("conditions")
	if len(d.Conditions) > resourcev1.AllocatedDeviceStatusMaxConditions {
		errs = append(errs, field.TooMany(cp, len(d.Conditions), resourcev1.AllocatedDeviceStatusMaxConditions))
	}
	errs = append(errs, metav1validation.ValidateConditions(d.Conditions, cp)...)
	if d.Data != nil && len(d.Data.Raw) > 0 {
		errs = append(errs, validateRawJSONObject(*d.Data, false, maxAllocatedDeviceDataLen, p.Child("data"))...)
	}
	if n := d.NetworkData; n != nil {
		np := p.Child("networkData")
		if len(n.InterfaceName) > maxInterfaceNameLen {
			errs = append(errs, field.TooLong(np.Child("interfaceName"), "", maxInterfaceNameLen))
		}
		if len(n.HardwareAddress) > maxHardwareAddressLen {
			errs = append(errs, field.TooLong(np.Child("hardwareAddress"), "", maxHardwareAddressLen))
		}
		errs = append(errs, eachUnique(n.IPs, maxNetworkIPs, np.Child("ips"), strKey, func(ip string, p *field.Path) field.ErrorList {
			return validation.IsValidInterfaceAddress(p, ip)
		})...)
	}
	return errs
}
