package resource

import (
	"context"
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func resourceSlices() registry.Resource {
	return registry.Resource{
		Kind:                resourcev1.SchemeGroupVersion.WithKind("ResourceSlice"),
		Plural:              "resourceslices",
		ReturnDeletedObject: true,
		Singular:            "resourceslice",
		TracksGeneration:    true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultTaints(obj.(*resourcev1.ResourceSlice).Spec.Devices) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				dropDisabledSliceFields(&obj.(*resourcev1.ResourceSlice).Spec, nil)
			},
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				dropDisabledSliceFields(&obj.(*resourcev1.ResourceSlice).Spec, &old.(*resourcev1.ResourceSlice).Spec)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateResourceSliceSpec(&obj.(*resourcev1.ResourceSlice).Spec, nil)
			},
			// An update is checked against the stored slice: its driver,
			// pool and node stay, and unchanged taints are not checked again.
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateResourceSliceSpec(&obj.(*resourcev1.ResourceSlice).Spec, &old.(*resourcev1.ResourceSlice).Spec)
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				s := obj.(*resourcev1.ResourceSlice)
				node := ""
				if s.Spec.NodeName != nil {
					node = *s.Spec.NodeName
				}
				return fields.Set{
					resourcev1.ResourceSliceSelectorNodeName: node,
					resourcev1.ResourceSliceSelectorDriver:   s.Spec.Driver,
					resourcev1.ResourceSliceSelectorPoolName: s.Spec.Pool.Name,
				}
			},
		},
	}
}

// defaultTaints stamps taints that say no time with the current second.
func defaultTaints(devices []resourcev1.Device) {
	for i := range devices {
		for j := range devices[i].Taints {
			defaultTaint(&devices[i].Taints[j])
		}
	}
}

const (
	exactlyOneNodeSelection = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
	unsetOrTrue             = "must be either unset or set to true"
	perDeviceSelection      = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)

func validateResourceSliceSpec(s, old *resourcev1.ResourceSliceSpec) field.ErrorList {
	p := field.NewPath("spec")
	errs := validateDriverName(s.Driver, p.Child("driver"))
	pp := p.Child("pool")
	errs = append(errs, validatePoolName(s.Pool.Name, pp.Child("name"))...)
	if s.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(pp.Child("resourceSliceCount"), s.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if s.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(pp.Child("generation"), s.Pool.Generation, "must be greater than or equal to zero"))
	}
	if old != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(s.Pool.Name, old.Pool.Name, pp.Child("name"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(s.Driver, old.Driver, p.Child("driver"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(s.NodeName, old.NodeName, p.Child("nodeName"))...)
	}

	var set []string
	if s.NodeName != nil {
		if *s.NodeName == "" {
			errs = append(errs, field.Invalid(p.Child("nodeName"), *s.NodeName, "must be either unset or set to a non-empty string"))
		} else {
			set = append(set, "`nodeName`")
			errs = append(errs, validateNodeName(*s.NodeName, p.Child("nodeName"))...)
		}
	}
	if s.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		np := p.Child("nodeSelector")
		errs = append(errs, podspec.ValidateNodeSelector(s.NodeSelector, false, np)...)
		if len(s.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(np.Child("nodeSelectorTerms"), s.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	for _, b := range []struct {
		name  string
		value *bool
	}{{"allNodes", s.AllNodes}, {"perDeviceNodeSelection", s.PerDeviceNodeSelection}} {
		switch {
		case b.value == nil:
		case *b.value:
			set = append(set, "`"+b.name+"`")
		default:
			errs = append(errs, field.Invalid(p.Child(b.name), false, unsetOrTrue))
		}
	}
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(p, exactlyOneNodeSelection))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")), exactlyOneNodeSelection+", but multiple fields are set"))
	}

	if s.SharedCounters != nil && s.Devices != nil {
		errs = append(errs, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	maxDevices := resourcev1.ResourceSliceMaxDevices
	if slices.ContainsFunc(s.Devices, func(d resourcev1.Device) bool { return len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 }) {
		maxDevices = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
	}
	perDevice := s.PerDeviceNodeSelection != nil && *s.PerDeviceNodeSelection
	errs = append(errs, eachUnique(s.Devices, maxDevices, p.Child("devices"),
		func(d resourcev1.Device) string { return d.Name },
		func(d resourcev1.Device, dp *field.Path) field.ErrorList {
			var before *resourcev1.Device
			if old != nil {
				if i := slices.IndexFunc(old.Devices, func(o resourcev1.Device) bool { return o.Name == d.Name }); i >= 0 {
					before = &old.Devices[i]
				}
			}
			return validateDevice(d, before, perDevice, dp)
		})...)
	errs = append(errs, eachUnique(s.SharedCounters, resourcev1.ResourceSliceMaxCounterSets, p.Child("sharedCounters"),
		func(c resourcev1.CounterSet) string { return c.Name },
		func(c resourcev1.CounterSet, cp *field.Path) field.ErrorList {
			return validateCounters(c.Name, "name", c.Counters, resourcev1.ResourceSliceMaxCountersPerCounterSet, cp)
		})...)

	if s.PartitionTypeAttribute != nil {
		errs = append(errs, validatePartitionTypeAttribute(s, p)...)
	}

	ops := map[resourcev1.SkipNodeOperation]bool{}
	for _, op := range s.SkipNodeOperations {
		ops[op] = true
	}
	if ops[resourcev1.SkipNodeOperationNodePrepareResources] && !ops[resourcev1.SkipNodeOperationNodeUnprepareResources] && !ops[resourcev1.SkipNodeOperationAll] {
		errs = append(errs, field.Invalid(p.Child("skipNodeOperations"), s.SkipNodeOperations, "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"))
	}
	return errs
}

// validatePartitionTypeAttribute: the attribute names a partition type
// only in a slice whose devices consume counters, and each such device
// carries it as a string (under its full name, or bare when it is in the
// driver's domain).
func validatePartitionTypeAttribute(s *resourcev1.ResourceSliceSpec, p *field.Path) field.ErrorList {
	name := string(*s.PartitionTypeAttribute)
	ap := p.Child("partitionTypeAttribute")
	if !slices.ContainsFunc(s.Devices, func(d resourcev1.Device) bool { return len(d.ConsumesCounters) > 0 }) {
		return field.ErrorList{field.Invalid(ap, name, "may only be set on a slice which declares devices that consume counters")}
	}
	if errs := validateFullyQualifiedName(name, ap); len(errs) > 0 {
		return errs
	}
	bare, _ := strings.CutPrefix(name, s.Driver+"/")
	var errs field.ErrorList
	for i, d := range s.Devices {
		if len(d.ConsumesCounters) == 0 {
			continue
		}
		attrPath := p.Child("devices").Index(i).Child("attributes").Key(name)
		a, ok := d.Attributes[resourcev1.QualifiedName(name)]
		if !ok && bare != "" {
			a, ok = d.Attributes[resourcev1.QualifiedName(bare)]
		}
		switch {
		case !ok:
			errs = append(errs, field.Required(attrPath, "device consumes counters and `partitionTypeAttribute` names this attribute, so it must be set"))
		case a.StringValue == nil:
			errs = append(errs, field.Invalid(attrPath, a, "must be a string value because `partitionTypeAttribute` names this attribute"))
		}
	}
	return errs
}

// validateCounters checks a counter set or a device's consumption of
// one: a DNS-label name and between one and max counters, each a DNS label.
func validateCounters(name, nameField string, counters map[string]resourcev1.Counter, max int, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child(nameField), ""))
	} else {
		errs = append(errs, dnsLabel(name, p.Child(nameField))...)
	}
	cp := p.Child("counters")
	switch {
	case len(counters) == 0:
		errs = append(errs, field.Required(cp, ""))
	case len(counters) > max:
		errs = append(errs, field.TooMany(cp, len(counters), max))
	default:
		for _, k := range sortedKeys(counters) {
			errs = append(errs, dnsLabel(k, cp)...)
		}
	}
	return errs
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func validateDevice(d resourcev1.Device, old *resourcev1.Device, perDeviceNodeSelection bool, p *field.Path) field.ErrorList {
	errs := dnsLabel(d.Name, p.Child("name"))
	if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	values := 0
	for _, a := range d.Attributes {
		if n := len(a.BoolValues) + len(a.IntValues) + len(a.StringValues) + len(a.VersionValues); n > 0 {
			values += n
		} else {
			values++
		}
	}
	if values > resourcev1.ResourceSliceMaxAttributeValuesPerDevice {
		errs = append(errs, field.Invalid(p, values, fmt.Sprintf("the total number of attribute values must not exceed %d", resourcev1.ResourceSliceMaxAttributeValuesPerDevice)))
	}
	ap := p.Child("attributes")
	for _, name := range sortedKeys(d.Attributes) {
		errs = append(errs, validateQualifiedName(string(name), ap)...)
		errs = append(errs, validateDeviceAttribute(d.Attributes[name], ap.Key(truncate(string(name))))...)
	}
	multiple := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
	cp := p.Child("capacity")
	if old == nil || !equality.Semantic.DeepEqual(old.Capacity, d.Capacity) {
		for _, name := range sortedKeys(d.Capacity) {
			errs = append(errs, validateQualifiedName(string(name), cp)...)
			if d.Capacity[name].RequestPolicy != nil && !multiple {
				errs = append(errs, field.Forbidden(cp.Key(truncate(string(name))).Child("requestPolicy"), "allowMultipleAllocations must be true"))
			}
		}
	}
	if old == nil || !equality.Semantic.DeepEqual(old.Taints, d.Taints) {
		errs = append(errs, eachItem(d.Taints, resourcev1.DeviceTaintsMaxLength, p.Child("taints"),
			func(t resourcev1.DeviceTaint, tp *field.Path) field.ErrorList { return validateDeviceTaint(t, nil, tp) })...)
	}
	errs = append(errs, eachUnique(d.ConsumesCounters, resourcev1.ResourceSliceMaxDeviceCounterConsumptionsPerDevice, p.Child("consumesCounters"),
		func(c resourcev1.DeviceCounterConsumption) string { return c.CounterSet },
		func(c resourcev1.DeviceCounterConsumption, cp *field.Path) field.ErrorList {
			return validateCounters(c.CounterSet, "counterSet", c.Counters, resourcev1.ResourceSliceMaxCountersPerDeviceCounterConsumption, cp)
		})...)

	if perDeviceNodeSelection {
		var set []string
		if d.NodeName != nil {
			if *d.NodeName == "" {
				errs = append(errs, field.Invalid(p.Child("nodeName"), "", "must not be empty"))
			} else {
				set = append(set, "`nodeName`")
				errs = append(errs, validateNodeName(*d.NodeName, p.Child("nodeName"))...)
			}
		}
		if d.NodeSelector != nil {
			set = append(set, "`nodeSelector`")
			errs = append(errs, podspec.ValidateNodeSelector(d.NodeSelector, false, p.Child("nodeSelector"))...)
		}
		if d.AllNodes != nil {
			if *d.AllNodes {
				set = append(set, "`allNodes`")
			} else {
				errs = append(errs, field.Invalid(p.Child("allNodes"), false, unsetOrTrue))
			}
		}
		switch len(set) {
		case 0:
			errs = append(errs, field.Required(p, perDeviceSelection))
		case 1:
		default:
			errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")), perDeviceSelection))
		}
	} else if d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil {
		errs = append(errs, field.Invalid(p, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
	}
	return append(errs, validateBindingConditions(d.BindingConditions, d.BindingFailureConditions, p)...)
}

// truncate shortens a map key for a field path as upstream does: keys
// longer than a domain, a slash and an ID keep their two ends around "...".
func truncate(key string) string {
	const max = resourcev1.DeviceMaxDomainLength + 1 + resourcev1.DeviceMaxIDLength
	if len(key) <= max {
		return key
	}
	const keep = max - len("...")
	return key[:(keep+1)/2] + "..." + key[len(key)-keep/2:]
}

// validateDeviceAttribute: exactly one value, strings of at most 64
// bytes, versions in semver.org 2.0.0 form, lists not empty.
func validateDeviceAttribute(a resourcev1.DeviceAttribute, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	str := func(v string, p *field.Path) {
		if len(v) > resourcev1.DeviceAttributeMaxValueLength {
			errs = append(errs, field.TooLong(p, "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	version := func(v string, p *field.Path) {
		if !semver.MatchString(v) {
			errs = append(errs, field.Invalid(p, v, "must be a string compatible with semver.org spec 2.0.0"))
		}
		str(v, p)
	}
	nonEmpty := func(isSet bool, length int, name string, value any) {
		if !isSet {
			return
		}
		n++
		if length == 0 {
			errs = append(errs, field.Invalid(p.Child(name), value, "must not be empty if specified"))
		}
	}
	if a.BoolValue != nil {
		n++
	}
	if a.IntValue != nil {
		n++
	}
	if a.StringValue != nil {
		n++
		str(*a.StringValue, p.Child("string"))
	}
	if a.VersionValue != nil {
		n++
		version(*a.VersionValue, p.Child("version"))
	}
	nonEmpty(a.BoolValues != nil, len(a.BoolValues), "bools", a.BoolValues)
	nonEmpty(a.IntValues != nil, len(a.IntValues), "ints", a.IntValues)
	nonEmpty(a.StringValues != nil, len(a.StringValues), "strings", a.StringValues)
	for i, v := range a.StringValues {
		str(v, p.Child("strings").Index(i))
	}
	nonEmpty(a.VersionValues != nil, len(a.VersionValues), "versions", a.VersionValues)
	for i, v := range a.VersionValues {
		version(v, p.Child("versions").Index(i))
	}
	switch n {
	case 0:
		errs = append(errs, field.Invalid(p, "", "exactly one value must be specified"))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, a, "exactly one value must be specified"))
	}
	return errs
}
