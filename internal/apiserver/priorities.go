package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// Priority orders group-versions in discovery, as an APIService's
// groupPriorityMinimum and versionPriority do: groups by Group, highest
// first; versions of one group by Version, highest first, then by
// Kubernetes version order (v2 before v1 before v1beta1).
type Priority struct{ Group, Version int32 }

// builtinPriorities are upstream's priorities for its built-in
// group-versions (kube-apiserver's table): the local APIServices carry
// them, and discovery lists groups in their order.
var builtinPriorities = map[schema.GroupVersion]Priority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "apiregistration.k8s.io", Version: "v1"}:       {18000, 15},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "certificates.k8s.io", Version: "v1beta1"}:     {17300, 9},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	{Group: "storagemigration.k8s.io", Version: "v1"}:      {15800, 15},
	// metrics.k8s.io is served by an aggregated metrics-server upstream,
	// registered at these priorities.
	{Group: "metrics.k8s.io", Version: "v1beta1"}: {100, 100},
}

// CustomResourcePriority is what upstream gives every served version of a
// CustomResourceDefinition: below every built-in group, versions in
// Kubernetes version order.
var CustomResourcePriority = Priority{1000, 100}

// BuiltinPriority is the priority upstream gives the built-in
// group-version gv; false: gv is not one of upstream's.
func BuiltinPriority(gv schema.GroupVersion) (Priority, bool) {
	p, ok := builtinPriorities[gv]
	return p, ok
}

// priorityOf is gv's priority when served by this server: upstream's for a
// built-in group-version, a custom resource's otherwise.
func priorityOf(gv schema.GroupVersion) Priority {
	if p, ok := builtinPriorities[gv]; ok {
		return p
	}
	return CustomResourcePriority
}

// versionBefore orders two versions of one group.
func versionBefore(a, b string, pa, pb int32) bool {
	if pa != pb {
		return pa > pb
	}
	return version.CompareKubeAwareVersionStrings(a, b) > 0
}
