package core

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/registry/core/subresources"
)

// ServiceIPFamilies are the IP families the cluster's service CIDRs cover,
// primary first. Services are defaulted and validated against them; the
// server may change this at start-up (e.g. for an IPv6 or dual-stack
// service range).
var ServiceIPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}

// NodePortRange is the inclusive range node ports must fall in (upstream's
// default --service-node-port-range).
var NodePortRange = [2]int32{30000, 32767}

func services() registry.Resource {
	return registry.Resource{
		Kind:                corev1.SchemeGroupVersion.WithKind("Service"),
		Plural:              "services",
		ReturnDeletedObject: true,
		Singular:            "service",
		ShortNames:          []string{"svc"},
		Categories:          []string{"all"},
		Namespaced:          true,
		Subresources:        []string{"status", "proxy"},
		Handlers:            map[string]registry.Handler{"proxy": subresources.Proxy},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultService(obj.(*corev1.Service)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				svc := obj.(*corev1.Service)
				svc.Status = corev1.ServiceStatus{}
				normalizeClusterIPs(svc, nil)
				initIPFamilyFields(svc, nil)
			},
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				svc, o := obj.(*corev1.Service), old.(*corev1.Service)
				patchAllocatedValues(svc, o)
				normalizeClusterIPs(svc, o)
				dropTypeDependentFields(svc, o)
				initIPFamilyFields(svc, o)
			},
			// Service names become DNS labels that must start with a letter.
			ValidateName: apivalidation.NameIsDNS1035Label,
			Validate:     validated(func(obj runtime.Object) field.ErrorList { return ValidateService(obj.(*corev1.Service)) }),
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateServiceUpdate(obj.(*corev1.Service), old.(*corev1.Service))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				svc := obj.(*corev1.Service)
				return validateLoadBalancerStatus(&svc.Status.LoadBalancer, field.NewPath("status", "loadBalancer"), &svc.Spec)
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				svc := obj.(*corev1.Service)
				return fields.Set{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
			},
		},
	}
}

func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

func needsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func needsClusterIP(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }

func needsNodePort(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

func defaultService(svc *corev1.Service) {
	s := &svc.Spec
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.SessionAffinity == corev1.ServiceAffinityNone {
		s.SessionAffinityConfig = nil
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP {
		if s.SessionAffinityConfig == nil || s.SessionAffinityConfig.ClientIP == nil || s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)}}
		}
	}
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(svc) && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.InternalTrafficPolicy == nil && (s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer || s.Type == corev1.ServiceTypeClusterIP) {
		s.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if s.Type == corev1.ServiceTypeLoadBalancer {
		if s.AllocateLoadBalancerNodePorts == nil {
			s.AllocateLoadBalancerNodePorts = ptr.To(true)
		}
		for i := range svc.Status.LoadBalancer.Ingress {
			ing := &svc.Status.LoadBalancer.Ingress[i]
			if ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
}

// normalizeClusterIPs keeps clusterIP and clusterIPs in step when a client
// set only the singular field (an old client), as upstream's REST layer does.
func normalizeClusterIPs(svc, old *corev1.Service) {
	s := &svc.Spec
	if old == nil {
		if s.ClusterIP != "" && len(s.ClusterIPs) == 0 {
			s.ClusterIPs = []string{s.ClusterIP}
		}
		return
	}
	if len(old.Spec.ClusterIPs) > 0 && len(s.ClusterIPs) == 0 && old.Spec.ClusterIP == s.ClusterIP {
		s.ClusterIPs = old.Spec.ClusterIPs
	}
	if old.Spec.ClusterIP != s.ClusterIP {
		if old.Spec.ClusterIP != "" && s.ClusterIP == "" {
			if sameStrings(old.Spec.ClusterIPs, s.ClusterIPs) {
				s.ClusterIPs = nil
			}
		} else if sameStrings(old.Spec.ClusterIPs, s.ClusterIPs) {
			s.ClusterIPs = []string{s.ClusterIP}
		}
	}
}

// patchAllocatedValues copies allocated values (cluster IPs, node ports,
// health-check node port) that an update left out, so that re-applying a
// manifest without them is not a change.
func patchAllocatedValues(svc, old *corev1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
	}
	if needsNodePort(old) && needsNodePort(svc) {
		used := func(s *corev1.Service) sets.Set[int32] {
			out := sets.New[int32]()
			for _, p := range s.Spec.Ports {
				if p.NodePort != 0 {
					out.Insert(p.NodePort)
				}
			}
			return out
		}
		taken := used(old).Intersection(used(svc))
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 {
				if v := byName[p.Name]; !taken.Has(v) {
					p.NodePort = v
				}
			}
		}
	}
	if needsHealthCheck(old) && needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// dropTypeDependentFields clears what a type change makes meaningless, when
// the client did not also change it.
func dropTypeDependentFields(svc, old *corev1.Service) {
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if sameStrings(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) {
			svc.Spec.ClusterIP = ""
			svc.Spec.ClusterIPs = nil
		}
		if sameFamilies(old.Spec.IPFamilies, svc.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if ptr.Equal(old.Spec.IPFamilyPolicy, svc.Spec.IPFamilyPolicy) {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePort(old) && !needsNodePort(svc) && sameNodePorts(old, svc) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheck(old) && !needsHealthCheck(svc) && old.Spec.HealthCheckNodePort == svc.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if svc.Spec.AllocateLoadBalancerNodePorts != nil && old.Spec.AllocateLoadBalancerNodePorts != nil &&
			*svc.Spec.AllocateLoadBalancerNodePorts == *old.Spec.AllocateLoadBalancerNodePorts {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if ptr.Equal(old.Spec.LoadBalancerClass, svc.Spec.LoadBalancerClass) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && old.Spec.ExternalTrafficPolicy == svc.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameFamilies(a, b []corev1.IPFamily) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameNodePorts(a, b *corev1.Service) bool {
	if len(a.Spec.Ports) != len(b.Spec.Ports) {
		return false
	}
	for i := range a.Spec.Ports {
		if a.Spec.Ports[i].NodePort != b.Spec.Ports[i].NodePort {
			return false
		}
	}
	return true
}

func familyOf(ip string) corev1.IPFamily {
	if isIPv6String(ip) {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

func otherFamily(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// initIPFamilyFields fills ipFamilyPolicy and ipFamilies the way upstream's
// service allocator does before allocating cluster IPs: SingleStack and the
// cluster's primary family by default; RequireDualStack for a headless
// service without selector; families inferred from given cluster IPs.
// Errors (a family the cluster lacks, …) are left to validation.
func initIPFamilyFields(svc, old *corev1.Service) {
	s := &svc.Spec
	if s.Type == corev1.ServiceTypeExternalName {
		return
	}
	if old != nil && old.Spec.IPFamilyPolicy != nil && *old.Spec.IPFamilyPolicy == corev1.IPFamilyPolicyPreferDualStack &&
		ptr.Equal(s.IPFamilyPolicy, old.Spec.IPFamilyPolicy) &&
		sameStrings(s.ClusterIPs, old.Spec.ClusterIPs) && sameFamilies(s.IPFamilies, old.Spec.IPFamilies) {
		return
	}
	headlessSelectorless := s.ClusterIP == corev1.ClusterIPNone && len(s.Selector) == 0
	if s.IPFamilyPolicy == nil {
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			s.IPFamilyPolicy = ptr.To(*old.Spec.IPFamilyPolicy)
		case headlessSelectorless:
			s.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		default:
			s.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		}
	}
	if old != nil && *s.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		if sameStrings(s.ClusterIPs, old.Spec.ClusterIPs) && len(s.ClusterIPs) > 1 {
			s.ClusterIPs = s.ClusterIPs[:1]
		}
		if sameFamilies(s.IPFamilies, old.Spec.IPFamilies) && len(s.IPFamilies) > 1 {
			s.IPFamilies = s.IPFamilies[:1]
		}
	}
	for i, ip := range s.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		if i >= len(s.IPFamilies) && validation.IsValidIP(nil, ip) == nil && clusterHasFamily(familyOf(ip)) {
			s.IPFamilies = append(s.IPFamilies, familyOf(ip))
		}
	}
	if headlessSelectorless {
		if len(s.IPFamilies) == 0 {
			s.IPFamilies = []corev1.IPFamily{ServiceIPFamilies[0]}
		}
		if len(s.IPFamilies) < 2 && *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			s.IPFamilies = append(s.IPFamilies, otherFamily(s.IPFamilies[0]))
		}
		return
	}
	if len(s.IPFamilies) == 0 {
		s.IPFamilies = []corev1.IPFamily{ServiceIPFamilies[0]}
	}
	if *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack && len(s.IPFamilies) == 1 && len(ServiceIPFamilies) == 2 {
		s.IPFamilies = append(s.IPFamilies, otherFamily(s.IPFamilies[0]))
	}
}

func clusterHasFamily(f corev1.IPFamily) bool {
	for _, x := range ServiceIPFamilies {
		if x == f {
			return true
		}
	}
	return false
}

var (
	supportedServiceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	supportedIPFamilyPolicies = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack,
		corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
	supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}
)

// ValidateService checks a service's spec as upstream does on create and
// update (the cluster-IP and IP-family rules included).
func ValidateService(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	s := &svc.Spec
	specPath := field.NewPath("spec")

	const hintsKey, modeKey = "service.kubernetes.io/topology-aware-hints", "service.kubernetes.io/topology-mode"
	if h, ok := svc.Annotations[hintsKey]; ok {
		if m, ok := svc.Annotations[modeKey]; ok && m != h {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(modeKey), m,
				fmt.Sprintf("must match annotations[%s] when both are specified", hintsKey)))
		}
	}

	if len(s.Ports) == 0 && !isHeadless(svc) && s.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	switch s.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if isHeadless(svc) {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), s.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", s.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(s.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(s.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if s.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(s.ExternalName, "."); cname != "" {
			errs = append(errs, validateDNS1123Subdomain(cname, specPath.Child("externalName"))...)
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	names := sets.New[string]()
	for i := range s.Ports {
		errs = append(errs, validateServicePort(&s.Ports[i], len(s.Ports) > 1, names, specPath.Child("ports").Index(i))...)
	}
	if s.Selector != nil {
		errs = append(errs, metavalidation.ValidateLabels(s.Selector, specPath.Child("selector"))...)
	}

	switch s.SessionAffinity {
	case "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	case corev1.ServiceAffinityClientIP:
		errs = append(errs, validateClientIPAffinity(s.SessionAffinityConfig, specPath.Child("sessionAffinityConfig"))...)
	case corev1.ServiceAffinityNone:
		if s.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
		}
	default:
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), s.SessionAffinity,
			[]corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}))
	}

	errs = append(errs, validateClusterIPsRelatedFields(svc)...)

	for i, ip := range s.ExternalIPs {
		p := specPath.Child("externalIPs").Index(i)
		if e := validation.IsValidIP(p, ip); len(e) != 0 {
			errs = append(errs, e...)
		} else {
			errs = append(errs, validateNonSpecialIP(ip, p)...)
		}
	}

	switch {
	case s.Type == "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	case !contains(supportedServiceTypes, s.Type):
		errs = append(errs, field.NotSupported(specPath.Child("type"), s.Type, supportedServiceTypes))
	}
	if s.Type == corev1.ServiceTypeClusterIP {
		for i := range s.Ports {
			if s.Ports[i].NodePort != 0 {
				errs = append(errs, field.Forbidden(specPath.Child("ports").Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	nodePorts := map[corev1.ServicePort]bool{}
	ports := map[corev1.ServicePort]bool{}
	for i, p := range s.Ports {
		pp := specPath.Child("ports").Index(i)
		if p.NodePort != 0 {
			if s.Type != corev1.ServiceTypeClusterIP && (p.NodePort < NodePortRange[0] || p.NodePort > NodePortRange[1]) {
				errs = append(errs, field.Invalid(pp.Child("nodePort"), p.NodePort,
					fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", NodePortRange[0], NodePortRange[1])))
			}
			key := corev1.ServicePort{Protocol: p.Protocol, NodePort: p.NodePort}
			if nodePorts[key] {
				errs = append(errs, field.Duplicate(pp.Child("nodePort"), p.NodePort))
			}
			nodePorts[key] = true
		}
		key := corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}
		if ports[key] {
			errs = append(errs, field.Duplicate(pp, key))
		}
		ports[key] = true
	}

	const lbOnly = "may only be used when `type` is 'LoadBalancer'"
	if len(s.LoadBalancerSourceRanges) > 0 {
		p := specPath.Child("LoadBalancerSourceRanges")
		if s.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(p, lbOnly))
		}
		for i, v := range s.LoadBalancerSourceRanges {
			errs = append(errs, validation.IsValidCIDR(p.Index(i), strings.TrimSpace(v))...)
		}
	} else if v, ok := svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]; ok {
		p := field.NewPath("metadata", "annotations").Key(corev1.AnnotationLoadBalancerSourceRangesKey)
		if s.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(p, lbOnly))
		}
		if v = strings.TrimSpace(v); v != "" {
			for _, c := range strings.Split(v, ",") {
				errs = append(errs, validation.IsValidCIDR(p, strings.TrimSpace(c))...)
			}
		}
	}
	if s.AllocateLoadBalancerNodePorts != nil && s.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), lbOnly))
	}
	if s.Type == corev1.ServiceTypeLoadBalancer && s.AllocateLoadBalancerNodePorts == nil {
		errs = append(errs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}
	if s.LoadBalancerClass != nil {
		if s.Type == corev1.ServiceTypeLoadBalancer {
			errs = append(errs, validateQualifiedName(*s.LoadBalancerClass, specPath.Child("loadBalancerClass"))...)
		} else {
			errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), lbOnly))
		}
	}

	if !externallyAccessible(svc) {
		if s.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), s.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	} else {
		valid := []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
		if s.ExternalTrafficPolicy == "" {
			errs = append(errs, field.Required(specPath.Child("externalTrafficPolicy"), ""))
		} else if !contains(valid, s.ExternalTrafficPolicy) {
			errs = append(errs, field.NotSupported(specPath.Child("externalTrafficPolicy"), s.ExternalTrafficPolicy, valid))
		}
	}
	if !needsHealthCheck(svc) {
		if s.HealthCheckNodePort != 0 {
			errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), s.HealthCheckNodePort,
				"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	} else if s.HealthCheckNodePort != 0 {
		// Zero is allowed here: the port is allocated after validation.
		for _, msg := range validation.IsValidPortNum(int(s.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), s.HealthCheckNodePort, msg))
		}
	}
	if s.InternalTrafficPolicy == nil {
		if s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer || s.Type == corev1.ServiceTypeClusterIP {
			errs = append(errs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
		}
	} else if valid := []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}; !contains(valid, *s.InternalTrafficPolicy) {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *s.InternalTrafficPolicy, valid))
	}
	if td := s.TrafficDistribution; td != nil {
		valid := []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode}
		if !contains(valid, *td) {
			errs = append(errs, field.NotSupported(specPath.Child("trafficDistribution"), *td, valid))
		}
	}
	return errs
}

func validateServicePort(sp *corev1.ServicePort, requireName bool, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && sp.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if sp.Name != "" {
		errs = append(errs, validateDNS1123Label(sp.Name, fldPath.Child("name"))...)
		if names.Has(sp.Name) {
			errs = append(errs, field.Duplicate(fldPath.Child("name"), sp.Name))
		} else {
			names.Insert(sp.Name)
		}
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), sp.Port, msg))
	}
	if sp.Protocol == "" {
		errs = append(errs, field.Required(fldPath.Child("protocol"), ""))
	} else if !contains(supportedPortProtocols, sp.Protocol) {
		errs = append(errs, field.NotSupported(fldPath.Child("protocol"), sp.Protocol, supportedPortProtocols))
	}
	errs = append(errs, podspec.ValidatePortNumOrName(sp.TargetPort, fldPath.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*sp.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return errs
}

func validateClientIPAffinity(cfg *corev1.SessionAffinityConfig, fldPath *field.Path) field.ErrorList {
	msg := fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)
	switch {
	case cfg == nil:
		return field.ErrorList{field.Required(fldPath, msg)}
	case cfg.ClientIP == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP"), msg)}
	case cfg.ClientIP.TimeoutSeconds == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP", "timeoutSeconds"), msg)}
	}
	if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
		return field.ErrorList{field.Invalid(fldPath.Child("clientIP", "timeoutSeconds"), cfg.ClientIP.TimeoutSeconds,
			fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds))}
	}
	return nil
}

// validateClusterIPsRelatedFields checks clusterIP/clusterIPs, ipFamilies and
// ipFamilyPolicy against each other and against the cluster's families.
func validateClusterIPsRelatedFields(svc *corev1.Service) field.ErrorList {
	s := &svc.Spec
	if s.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	ipsPath := field.NewPath("spec", "clusterIPs")
	famPath := field.NewPath("spec", "ipFamilies")
	polPath := field.NewPath("spec", "ipFamilyPolicy")

	if s.ClusterIP != "" {
		if len(s.ClusterIPs) == 0 {
			errs = append(errs, field.Required(ipsPath, ""))
		} else if s.ClusterIPs[0] != s.ClusterIP {
			errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(s.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := sets.New[corev1.IPFamily]()
	for i, f := range s.IPFamilies {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(famPath.Index(i), f, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}))
		}
		if seen.Has(f) {
			errs = append(errs, field.Duplicate(famPath.Index(i), f))
		}
		seen.Insert(f)
	}
	if s.IPFamilyPolicy != nil && !contains(supportedIPFamilyPolicies, *s.IPFamilyPolicy) {
		errs = append(errs, field.NotSupported(polPath, s.IPFamilyPolicy, supportedIPFamilyPolicies))
	}
	badIPs := false
	for i, ip := range s.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(s.ClusterIPs) > 1 {
				badIPs = true
				errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		e := validation.IsValidIP(ipsPath.Index(i), ip)
		badIPs = badIPs || len(e) != 0
		errs = append(errs, e...)
	}
	if len(s.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "may only hold up to 2 values"))
	}
	if badIPs {
		return errs
	}
	if len(s.ClusterIPs) > 1 && !isDualStack(s.ClusterIPs) {
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if !isHeadless(svc) {
		for i, ip := range s.ClusterIPs {
			if i >= len(s.IPFamilies) {
				break
			}
			if s.IPFamilies[i] == corev1.IPv4Protocol && isIPv6String(ip) {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
			}
			if s.IPFamilies[i] == corev1.IPv6Protocol && !isIPv6String(ip) {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
			}
		}
	}

	// What upstream's allocator rejects, checked here against the cluster's
	// configured families.
	if s.IPFamilyPolicy != nil && *s.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		if len(s.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(polPath, s.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(s.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(polPath, s.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	for i, ip := range s.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		if !clusterHasFamily(familyOf(ip)) {
			errs = append(errs, field.Invalid(ipsPath.Index(i), s.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", familyOf(ip))))
		}
	}
	if s.ClusterIP == corev1.ClusterIPNone && len(s.Selector) == 0 {
		return errs // headless without selector may carry any families
	}
	if s.IPFamilyPolicy != nil && *s.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack && len(ServiceIPFamilies) < 2 {
		errs = append(errs, field.Invalid(polPath, s.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, f := range s.IPFamilies {
		if !clusterHasFamily(f) {
			errs = append(errs, field.Invalid(famPath.Index(i), f, "not configured on this cluster"))
		}
	}
	return errs
}

func validateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	ipsPath := field.NewPath("spec", "clusterIPs")
	famPath := field.NewPath("spec", "ipFamilies")
	polPath := field.NewPath("spec", "ipFamilyPolicy")
	s, o := &svc.Spec, &old.Spec
	external := s.Type == corev1.ServiceTypeExternalName || o.Type == corev1.ServiceTypeExternalName

	// Cluster IPs: the primary never changes; a secondary may be added or,
	// with SingleStack, released.
	if !external && !(isHeadless(svc) && isHeadless(old)) {
		switch {
		case len(o.ClusterIPs) == len(s.ClusterIPs):
			for i, ip := range o.ClusterIPs {
				if ip != s.ClusterIPs[i] {
					errs = append(errs, field.Invalid(ipsPath.Index(i), s.ClusterIPs, "may not change once set"))
				}
			}
		case len(o.ClusterIPs) > len(s.ClusterIPs):
			if len(s.ClusterIPs) == 0 {
				errs = append(errs, field.Invalid(ipsPath.Index(0), s.ClusterIPs, "primary clusterIP can not be unset"))
			}
			if len(o.ClusterIPs) > 0 && len(s.ClusterIPs) > 0 && s.ClusterIPs[0] != o.ClusterIPs[0] {
				errs = append(errs, field.Invalid(ipsPath.Index(0), s.ClusterIPs, "may not change once set"))
			}
			if len(s.ClusterIPs) == 1 && (s.IPFamilyPolicy == nil || *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
				errs = append(errs, field.Invalid(polPath, s.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
			}
		default:
			if len(o.ClusterIPs) > 0 && s.ClusterIPs[0] != o.ClusterIPs[0] {
				errs = append(errs, field.Invalid(ipsPath.Index(0), s.ClusterIPs, "may not change once set"))
			}
		}
	}
	// IP families: likewise, except for headless services.
	if !external && isHeadless(svc) == isHeadless(old) && !isHeadless(svc) {
		switch {
		case len(o.IPFamilies) == len(s.IPFamilies):
			for i, f := range o.IPFamilies {
				if f != s.IPFamilies[i] {
					errs = append(errs, field.Invalid(famPath.Index(0), s.IPFamilies, "may not change once set"))
				}
			}
		case len(o.IPFamilies) > len(s.IPFamilies):
			if len(s.ClusterIPs) == 0 {
				errs = append(errs, field.Invalid(famPath.Index(0), s.IPFamilies, "primary ipFamily can not be unset"))
			}
			if len(s.IPFamilies) > 0 && s.IPFamilies[0] != o.IPFamilies[0] {
				errs = append(errs, field.Invalid(famPath.Index(0), s.ClusterIPs, "may not change once set"))
			}
			if len(s.IPFamilies) == 1 && (s.IPFamilyPolicy == nil || *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
				errs = append(errs, field.Invalid(polPath, s.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary ipFamily"))
			}
		default:
			if len(o.IPFamilies) > 0 && len(s.IPFamilies) > 0 && s.IPFamilies[0] != o.IPFamilies[0] {
				errs = append(errs, field.Invalid(famPath.Index(0), s.ClusterIPs, "may not change once set"))
			}
		}
	}
	if o.Type == corev1.ServiceTypeLoadBalancer && s.Type == corev1.ServiceTypeLoadBalancer && !ptr.Equal(o.LoadBalancerClass, s.LoadBalancerClass) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "loadBalancerClass"), s.LoadBalancerClass, "may not change once set"))
	}
	if needsHealthCheck(old) && needsHealthCheck(svc) && s.HealthCheckNodePort != o.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable"))
	}
	return errs
}

func validateLoadBalancerStatus(st *corev1.LoadBalancerStatus, fldPath *field.Path, spec *corev1.ServiceSpec) field.ErrorList {
	var errs field.ErrorList
	ingPath := fldPath.Child("ingress")
	if spec.Type != corev1.ServiceTypeLoadBalancer && len(st.Ingress) != 0 {
		return field.ErrorList{field.Forbidden(ingPath, "may only be used when `spec.type` is 'LoadBalancer'")}
	}
	modes := []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP}
	for i, ing := range st.Ingress {
		p := ingPath.Index(i)
		if ing.IP != "" {
			errs = append(errs, validation.IsValidIP(p.Child("ip"), ing.IP)...)
		}
		switch {
		case ing.IPMode == nil && ing.IP != "":
			errs = append(errs, field.Required(p.Child("ipMode"), "must be specified when `ip` is set"))
		case ing.IPMode != nil && ing.IP == "":
			errs = append(errs, field.Forbidden(p.Child("ipMode"), "may not be specified when `ip` is not set"))
		case ing.IPMode != nil && !contains(modes, *ing.IPMode):
			errs = append(errs, field.NotSupported(p.Child("ipMode"), ing.IPMode, modes))
		}
		if ing.Hostname != "" {
			errs = append(errs, validateDNS1123Subdomain(ing.Hostname, p.Child("hostname"))...)
			if validation.IsValidIP(nil, ing.Hostname) == nil {
				errs = append(errs, field.Invalid(p.Child("hostname"), ing.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// maxClientIPAffinitySeconds is the longest ClientIP session affinity (one day).
const maxClientIPAffinitySeconds = 86400
