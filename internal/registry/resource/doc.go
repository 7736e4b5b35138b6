// Package resource supplies the registry.Resource descriptions of the
// resource.k8s.io/v1 resources of Dynamic Resource Allocation:
// deviceclasses, resourceclaims (+status), resourceclaimtemplates,
// resourceslices and devicetaintrules (+status), one file each, with the
// validation they share in validation.go.
//
// Defaults are upstream v1.37's (a request's allocationMode ExactCount
// with count 1, a taint's timeAdded now). Validation follows upstream's
// rules, field paths and messages: names and required fields, the size
// limits of requests, selectors, devices and the like, CEL selector and
// derived-attribute expressions that must compile in the DRA environment
// (k8s.io/dynamic-resource-allocation/cel) within upstream's cost limits,
// derived attributes that a constraint uses, a claim's and a template's
// immutable spec, a slice's immutable driver, pool and node, and a claim's
// status (reservations only of an allocated claim, an allocation that
// never changes once set). As upstream, the fields of DRA features that
// v1.37 leaves off (consumable capacity, partitionable devices, binding
// conditions, node-allocatable resources, list attributes) are dropped
// from writes unless the stored object already uses them. Nothing in plainkube acts on these objects yet:
// the API server stores and serves them, no scheduler plugin allocates
// claims and no node driver prepares devices.
package resource

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the resource.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{deviceClasses(), resourceClaims(), resourceClaimTemplates(), resourceSlices(), deviceTaintRules()}
}
