package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

func init() {
	registerNetworking()
	registerRBAC()
	registerStorage()
	registerAdmission()
	registerMisc()
}

func registerNetworking() {
	register(gvk("discovery.k8s.io", "v1", "EndpointSlice"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("AddressType", discoveryv1beta1.EndpointSlice{}.SwaggerDoc()["addressType"]),
		str("Ports", discoveryv1beta1.EndpointSlice{}.SwaggerDoc()["ports"]),
		str("Endpoints", discoveryv1beta1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
		ageColumn(),
	}, typed(func(es *discoveryv1.EndpointSlice) []interface{} {
		var ports, addrs []string
		for _, p := range es.Ports {
			switch {
			case p.Port != nil:
				ports = append(ports, strconv.Itoa(int(*p.Port)))
			case p.Name != nil:
				ports = append(ports, *p.Name)
			default:
				ports = append(ports, "*")
			}
		}
		for _, e := range es.Endpoints {
			addrs = append(addrs, e.Addresses...)
		}
		return row(es.Name, string(es.AddressType), orUnset(firstN(ports, 3, ",")), orUnset(firstN(addrs, 3, ",")),
			age(es.CreationTimestamp))
	}))

	register(gvk("networking.k8s.io", "v1", "Ingress"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Class", "The name of the IngressClass resource that should be used for additional configuration"),
		str("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
		str("Address", "Address is a list containing ingress points for the load-balancer"),
		str("Ports", "Ports of TLS configurations that open"),
		ageColumn(),
	}, typed(func(ing *networkingv1.Ingress) []interface{} {
		class := "<none>"
		if ing.Spec.IngressClassName != nil {
			class = *ing.Spec.IngressClassName
		}
		var addrs []string
		for _, in := range ing.Status.LoadBalancer.Ingress {
			addrs = append(addrs, firstNonEmpty(in.IP, in.Hostname))
		}
		ports := "80"
		if len(ing.Spec.TLS) > 0 {
			ports = "80, 443"
		}
		return row(ing.Name, class, ingressHosts(ing.Spec.Rules), strings.Join(sortedSet(addrs), ","), ports,
			age(ing.CreationTimestamp))
	}))

	register(gvk("networking.k8s.io", "v1", "IngressClass"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Controller", "Controller that is responsible for handling this class"),
		str("Parameters", "A reference to a resource with additional parameters"),
		ageColumn(),
	}, typed(func(ic *networkingv1.IngressClass) []interface{} {
		params := "<none>"
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind
			if p.APIGroup != nil {
				params += "." + *p.APIGroup
			}
			params += "/" + p.Name
		}
		return row(ic.Name, ic.Spec.Controller, params, age(ic.CreationTimestamp))
	}))

	register(gvk("networking.k8s.io", "v1", "NetworkPolicy"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Pod-Selector", extensionsv1beta1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]),
		ageColumn(),
	}, typed(func(np *networkingv1.NetworkPolicy) []interface{} {
		return row(np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(np.CreationTimestamp))
	}))

	register(gvk("networking.k8s.io", "v1", "ServiceCIDR"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("CIDRs", networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]),
		ageColumn(),
	}, typed(func(sc *networkingv1.ServiceCIDR) []interface{} {
		return row(sc.Name, strings.Join(sc.Spec.CIDRs, ","), age(sc.CreationTimestamp))
	}))

	register(gvk("networking.k8s.io", "v1", "IPAddress"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("ParentRef", networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]),
	}, typed(func(ip *networkingv1.IPAddress) []interface{} {
		parent := "<none>"
		if p := ip.Spec.ParentRef; p != nil {
			parent = strings.ToLower(schema.GroupResource{Group: p.Group, Resource: p.Resource}.String())
			if p.Namespace != "" {
				parent += "/" + p.Namespace
			}
			parent += "/" + p.Name
		}
		// Upstream also sends the age, in a third cell without a column;
		// kubectl shows only the declared columns.
		return row(ip.Name, parent)
	}))
}

// ingressHosts lists the rules' hosts, three at most; "*" when none is set.
// As upstream, the "more" count is of rules, with or without a host.
func ingressHosts(rules []networkingv1.IngressRule) string {
	var hosts []string
	more := false
	for _, r := range rules {
		if len(hosts) == 3 {
			more = true
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	out := strings.Join(hosts, ",")
	if more {
		out += " + " + strconv.Itoa(len(rules)-3) + " more..."
	}
	return out
}

func orUnset(s string) string {
	if s == "" {
		return "<unset>"
	}
	return s
}

func registerRBAC() {
	// Upstream has no printer for Roles and ClusterRoles.
	specs[gvk("rbac.authorization.k8s.io", "v1", "Role")] = defaultSpec
	specs[gvk("rbac.authorization.k8s.io", "v1", "ClusterRole")] = defaultSpec

	bindingColumns := func(kind, roleRefDoc string) []metav1.TableColumnDefinition {
		return []metav1.TableColumnDefinition{
			nameColumn(),
			str("Role", roleRefDoc),
			ageColumn(),
			wide(str("Users", "Users in the "+kind)),
			wide(str("Groups", "Groups in the "+kind)),
			wide(str("ServiceAccounts", "ServiceAccounts in the "+kind)),
		}
	}
	register(gvk("rbac.authorization.k8s.io", "v1", "RoleBinding"),
		bindingColumns("roleBinding", rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		typed(func(rb *rbacv1.RoleBinding) []interface{} {
			return bindingCells(rb.Name, rb.RoleRef, rb.Subjects, rb.CreationTimestamp)
		}))
	register(gvk("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
		bindingColumns("clusterRoleBinding", rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]),
		typed(func(crb *rbacv1.ClusterRoleBinding) []interface{} {
			return bindingCells(crb.Name, crb.RoleRef, crb.Subjects, crb.CreationTimestamp)
		}))
}

func bindingCells(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created metav1.Time) []interface{} {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return row(name, ref.Kind+"/"+ref.Name, age(created),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", "))
}

func registerStorage() {
	scDoc := storagev1.StorageClass{}.SwaggerDoc()
	register(gvk("storage.k8s.io", "v1", "StorageClass"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Provisioner", scDoc["provisioner"]),
		str("ReclaimPolicy", scDoc["reclaimPolicy"]),
		str("VolumeBindingMode", scDoc["volumeBindingMode"]),
		str("AllowVolumeExpansion", scDoc["allowVolumeExpansion"]),
		ageColumn(),
	}, typed(func(sc *storagev1.StorageClass) []interface{} {
		name := sc.Name
		if isDefaultClass(sc.Annotations, "storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class") {
			name += " (default)"
		}
		reclaim := string(corev1.PersistentVolumeReclaimDelete)
		if sc.ReclaimPolicy != nil {
			reclaim = string(*sc.ReclaimPolicy)
		}
		binding := string(storagev1.VolumeBindingImmediate)
		if sc.VolumeBindingMode != nil {
			binding = string(*sc.VolumeBindingMode)
		}
		expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		return row(name, sc.Provisioner, reclaim, binding, expand, age(sc.CreationTimestamp))
	}))

	register(gvk("storage.k8s.io", "v1", "VolumeAttributesClass"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("DriverName", storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]),
		ageColumn(),
	}, typed(func(vac *storagev1.VolumeAttributesClass) []interface{} {
		name := vac.Name
		if isDefaultClass(vac.Annotations, "storage.kubernetes.io/is-default-class") {
			name += " (default)"
		}
		return row(name, vac.DriverName, age(vac.CreationTimestamp))
	}))

	csiDoc := storagev1.CSIDriverSpec{}.SwaggerDoc()
	register(gvk("storage.k8s.io", "v1", "CSIDriver"), []metav1.TableColumnDefinition{
		nameColumn(),
		boolean("AttachRequired", csiDoc["attachRequired"]),
		boolean("PodInfoOnMount", csiDoc["podInfoOnMount"]),
		boolean("StorageCapacity", csiDoc["storageCapacity"]),
		str("TokenRequests", csiDoc["tokenRequests"]),
		boolean("RequiresRepublish", csiDoc["requiresRepublish"]),
		str("Modes", csiDoc["volumeLifecycleModes"]),
		ageColumn(),
	}, typed(func(d *storagev1.CSIDriver) []interface{} {
		attach := d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
		tokens := "<unset>"
		if d.Spec.TokenRequests != nil {
			aud := make([]string, len(d.Spec.TokenRequests))
			for i, t := range d.Spec.TokenRequests {
				aud[i] = t.Audience
			}
			tokens = strings.Join(aud, ",")
		}
		modes := make([]string, len(d.Spec.VolumeLifecycleModes))
		for i, m := range d.Spec.VolumeLifecycleModes {
			modes[i] = string(m)
		}
		return row(d.Name, attach, isTrue(d.Spec.PodInfoOnMount), isTrue(d.Spec.StorageCapacity), tokens,
			isTrue(d.Spec.RequiresRepublish), orNone(strings.Join(modes, ",")), age(d.CreationTimestamp))
	}))

	register(gvk("storage.k8s.io", "v1", "CSINode"), []metav1.TableColumnDefinition{
		nameColumn(),
		integer("Drivers", "Drivers indicates the number of CSI drivers registered on the node"),
		ageColumn(),
	}, typed(func(n *storagev1.CSINode) []interface{} {
		return row(n.Name, int64(len(n.Spec.Drivers)), age(n.CreationTimestamp))
	}))

	register(gvk("storage.k8s.io", "v1", "VolumeAttachment"), []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		str("PV", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
		str("Node", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]),
		boolean("Attached", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
		ageColumn(),
	}, typed(func(va *storagev1.VolumeAttachment) []interface{} {
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return row(va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, age(va.CreationTimestamp))
	}))

	// Upstream serves CSIStorageCapacities with the default table (its
	// registry does not use the CSIStorageCapacity printer).
	specs[gvk("storage.k8s.io", "v1", "CSIStorageCapacity")] = defaultSpec
}

func isDefaultClass(annotations map[string]string, keys ...string) bool {
	for _, k := range keys {
		if annotations[k] == "true" {
			return true
		}
	}
	return false
}

func isTrue(b *bool) bool { return b != nil && *b }

func registerAdmission() {
	webhookColumns := []metav1.TableColumnDefinition{
		nameColumn(),
		integer("Webhooks", "Webhooks indicates the number of webhooks registered in this configuration"),
		ageColumn(),
	}
	register(gvk("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"), webhookColumns,
		typed(func(c *admissionregistrationv1.MutatingWebhookConfiguration) []interface{} {
			return row(c.Name, int64(len(c.Webhooks)), age(c.CreationTimestamp))
		}))
	register(gvk("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"), webhookColumns,
		typed(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) []interface{} {
			return row(c.Name, int64(len(c.Webhooks)), age(c.CreationTimestamp))
		}))

	paramKindDoc := "ParamKind specifies the kind of resources used to parameterize this policy"
	register(gvk("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"), []metav1.TableColumnDefinition{
		nameColumn(),
		integer("Validations", "Validations indicates the number of validation rules defined in this configuration"),
		str("ParamKind", paramKindDoc),
		ageColumn(),
	}, typed(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) []interface{} {
		return row(p.Name, int64(len(p.Spec.Validations)), paramKind(p.Spec.ParamKind), age(p.CreationTimestamp))
	}))
	register(gvk("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy"), []metav1.TableColumnDefinition{
		nameColumn(),
		integer("Mutations", "Mutation indicates the number of mutations rules defined in this configuration"),
		str("ParamKind", paramKindDoc),
		ageColumn(),
	}, typed(func(p *admissionregistrationv1.MutatingAdmissionPolicy) []interface{} {
		return row(p.Name, int64(len(p.Spec.Mutations)), paramKind(p.Spec.ParamKind), age(p.CreationTimestamp))
	}))

	bindingColumns := []metav1.TableColumnDefinition{
		nameColumn(),
		str("PolicyName", "PolicyName indicates the policy definition which the policy binding binded to"),
		str("ParamRef", "ParamRef indicates the param resource which sets the configration param"),
		ageColumn(),
	}
	register(gvk("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding"), bindingColumns,
		typed(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) []interface{} {
			return row(b.Name, b.Spec.PolicyName, paramRef(b.Spec.ParamRef), age(b.CreationTimestamp))
		}))
	register(gvk("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding"), bindingColumns,
		typed(func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) []interface{} {
			return row(b.Name, b.Spec.PolicyName, paramRef(b.Spec.ParamRef), age(b.CreationTimestamp))
		}))
}

func paramKind(k *admissionregistrationv1.ParamKind) string {
	if k == nil {
		return "<unset>"
	}
	return k.APIVersion + "/" + k.Kind
}

func paramRef(r *admissionregistrationv1.ParamRef) string {
	switch {
	case r == nil:
		return "<unset>"
	case r.Name != "" && r.Namespace != "":
		return r.Namespace + "/" + r.Name
	case r.Name != "":
		// The param may be cluster-scoped or in each namespace: "*".
		return "*/" + r.Name
	case r.Selector != nil:
		return r.Selector.String()
	}
	return "<unset>"
}

func registerMisc() {
	register(gvk("coordination.k8s.io", "v1", "Lease"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Holder", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		ageColumn(),
	}, typed(func(l *coordinationv1.Lease) []interface{} {
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return row(l.Name, holder, age(l.CreationTimestamp))
	}))

	// events.k8s.io Events are the same objects as core Events, printed
	// alike.
	register(gvk("events.k8s.io", "v1", "Event"), eventColumns(), typed(func(e *eventsv1.Event) []interface{} {
		return coreEventCells(coreEvent(e))
	}))

	register(gvk("policy", "v1", "PodDisruptionBudget"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Min Available", "The minimum number of pods that must be available."),
		str("Max Unavailable", "The maximum number of pods that may be unavailable."),
		integer("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time."),
		ageColumn(),
	}, typed(func(pdb *policyv1.PodDisruptionBudget) []interface{} {
		minAvailable, maxUnavailable := "N/A", "N/A"
		if pdb.Spec.MinAvailable != nil {
			minAvailable = pdb.Spec.MinAvailable.String()
		}
		if pdb.Spec.MaxUnavailable != nil {
			maxUnavailable = pdb.Spec.MaxUnavailable.String()
		}
		return row(pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp))
	}))

	pcDoc := schedulingv1.PriorityClass{}.SwaggerDoc()
	register(gvk("scheduling.k8s.io", "v1", "PriorityClass"), []metav1.TableColumnDefinition{
		nameColumn(),
		integer("Value", pcDoc["value"]),
		boolean("Global-Default", pcDoc["globalDefault"]),
		ageColumn(),
		str("PreemptionPolicy", pcDoc["preemptionPolicy"]),
	}, typed(func(pc *schedulingv1.PriorityClass) []interface{} {
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return row(pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp), policy)
	}))

	register(gvk("node.k8s.io", "v1", "RuntimeClass"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Handler", nodev1.RuntimeClass{}.SwaggerDoc()["handler"]),
		ageColumn(),
	}, typed(func(rc *nodev1.RuntimeClass) []interface{} {
		return row(rc.Name, rc.Handler, age(rc.CreationTimestamp))
	}))

	csrSpec := certificatesv1beta1.CertificateSigningRequestSpec{}.SwaggerDoc()
	register(gvk("certificates.k8s.io", "v1", "CertificateSigningRequest"), []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
		str("SignerName", csrSpec["signerName"]),
		str("Requestor", csrSpec["request"]),
		str("RequestedDuration", csrSpec["expirationSeconds"]),
		str("Condition", certificatesv1beta1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
	}, typed(func(csr *certificatesv1.CertificateSigningRequest) []interface{} {
		requested := "<none>"
		if s := csr.Spec.ExpirationSeconds; s != nil {
			requested = duration.HumanDuration(time.Duration(*s) * time.Second)
		}
		return row(csr.Name, age(csr.CreationTimestamp), orNone(csr.Spec.SignerName), csr.Spec.Username, requested, csrCondition(csr))
	}))

	register(gvk("certificates.k8s.io", "v1", "ClusterTrustBundle"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("SignerName", certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]),
	}, typed(func(ctb *certificatesv1.ClusterTrustBundle) []interface{} {
		return row(ctb.Name, orNone(ctb.Spec.SignerName))
	}))

	pcrSpec := certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()
	register(gvk("certificates.k8s.io", "v1", "PodCertificateRequest"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("PodName", pcrSpec["podName"]),
		str("ServiceAccountName", pcrSpec["serviceAccountName"]),
		str("NodeName", pcrSpec["nodeName"]),
		str("SignerName", pcrSpec["signerName"]),
		str("State", "Is the request Pending, Issued, Denied, or Failed?"),
		str("UnverifiedUserAnnotations", pcrSpec["unverifiedUserAnnotations"]),
	}, typed(func(pcr *certificatesv1.PodCertificateRequest) []interface{} {
		// Issued, Denied and Failed exclude each other.
		state := "Pending"
		for _, c := range pcr.Status.Conditions {
			switch c.Type {
			case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied,
				certificatesv1.PodCertificateRequestConditionTypeFailed:
				state = c.Type
			}
		}
		return row(pcr.Name, pcr.Spec.PodName, pcr.Spec.ServiceAccountName, string(pcr.Spec.NodeName), pcr.Spec.SignerName, state,
			labels.FormatLabels(pcr.Spec.UnverifiedUserAnnotations))
	}))

	// Upstream's Name column here has no "name" format.
	register(gvk("storagemigration.k8s.io", "v1", "StorageVersionMigration"), []metav1.TableColumnDefinition{
		str("Name", metaDoc["name"]),
		str("Resource", "GroupResource to migrate"),
		str("Status", "Status of the migration"),
	}, typed(func(svm *storagemigrationv1.StorageVersionMigration) []interface{} {
		status := "Unknown"
		for _, c := range svm.Status.Conditions {
			if c.Status != metav1.ConditionTrue {
				continue
			}
			switch storagemigrationv1.MigrationConditionType(c.Type) {
			case storagemigrationv1.MigrationRunning, storagemigrationv1.MigrationFailed, storagemigrationv1.MigrationSucceeded:
				status = c.Type
			}
		}
		return row(svm.Name, svm.Spec.Resource.String(), status)
	}))

	fsDoc := flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()
	register(gvk("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("PriorityLevel", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
		str("MatchingPrecedence", fsDoc["matchingPrecedence"]),
		str("DistinguisherMethod", fsDoc["distinguisherMethod"]),
		ageColumn(),
		str("MissingPL", "references a broken or non-existent PriorityLevelConfiguration"),
	}, typed(func(fs *flowcontrolv1.FlowSchema) []interface{} {
		method := "<none>"
		if fs.Spec.DistinguisherMethod != nil {
			method = string(fs.Spec.DistinguisherMethod.Type)
		}
		missing := "?"
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
				break
			}
		}
		return row(fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method,
			age(fs.CreationTimestamp), missing)
	}))
	// Upstream lists FlowSchemas in the order they are matched in.
	specs[gvk("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema")].Less = func(a, b runtime.Object) bool {
		x, okx := a.(*flowcontrolv1.FlowSchema)
		y, oky := b.(*flowcontrolv1.FlowSchema)
		if !okx || !oky {
			return false
		}
		if x.Spec.MatchingPrecedence != y.Spec.MatchingPrecedence {
			return x.Spec.MatchingPrecedence < y.Spec.MatchingPrecedence
		}
		return x.Name < y.Name
	}

	queuing := flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
	register(gvk("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Type", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
		str("NominalConcurrencyShares", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
		str("Queues", queuing["queues"]),
		str("HandSize", queuing["handSize"]),
		str("QueueLengthLimit", queuing["queueLengthLimit"]),
		ageColumn(),
	}, typed(func(pl *flowcontrolv1.PriorityLevelConfiguration) []interface{} {
		var shares, queues, handSize, queueLength interface{} = "<none>", "<none>", "<none>", "<none>"
		if l := pl.Spec.Limited; l != nil {
			shares = int64(int32Value(l.NominalConcurrencyShares))
			if q := l.LimitResponse.Queuing; q != nil {
				queues, handSize, queueLength = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
			}
		}
		return row(pl.Name, string(pl.Spec.Type), shares, queues, handSize, queueLength, age(pl.CreationTimestamp))
	}))

	register(gvk("resource.k8s.io", "v1", "DeviceClass"), []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
	}, typed(func(dc *resourcev1.DeviceClass) []interface{} {
		return row(dc.Name, age(dc.CreationTimestamp))
	}))
	register(gvk("resource.k8s.io", "v1", "ResourceClaim"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("State", "A summary of the current state (allocated, pending, reserved, etc.)."),
		ageColumn(),
	}, typed(func(rc *resourcev1.ResourceClaim) []interface{} {
		var states []string
		if rc.DeletionTimestamp != nil {
			states = append(states, "deleted")
		}
		switch {
		case rc.Status.Allocation != nil:
			states = append(states, "allocated")
			if len(rc.Status.ReservedFor) > 0 {
				states = append(states, "reserved")
			}
		case rc.DeletionTimestamp == nil:
			states = append(states, "pending")
		}
		return row(rc.Name, strings.Join(states, ","), age(rc.CreationTimestamp))
	}))
	register(gvk("resource.k8s.io", "v1", "ResourceClaimTemplate"), []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
	}, typed(func(t *resourcev1.ResourceClaimTemplate) []interface{} {
		return row(t.Name, age(t.CreationTimestamp))
	}))
	sliceDoc := resourcev1.ResourceSliceSpec{}.SwaggerDoc()
	register(gvk("resource.k8s.io", "v1", "ResourceSlice"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Node", sliceDoc["nodeName"]),
		str("Driver", sliceDoc["driver"]),
		str("Pool", resourcev1.ResourcePool{}.SwaggerDoc()["name"]),
		ageColumn(),
	}, typed(func(s *resourcev1.ResourceSlice) []interface{} {
		node := ""
		if s.Spec.NodeName != nil {
			node = *s.Spec.NodeName
		}
		return row(s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, age(s.CreationTimestamp))
	}))
	// The selector is not printed (it can be long); the taint is.
	taintDoc := resourcev1.DeviceTaint{}.SwaggerDoc()
	register(gvk("resource.k8s.io", "v1", "DeviceTaintRule"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Key", taintDoc["key"]),
		str("Value", taintDoc["value"]),
		str("Effect", taintDoc["effect"]),
		str("TimeAdded", taintDoc["timeAdded"]),
		ageColumn(),
	}, typed(func(r *resourcev1.DeviceTaintRule) []interface{} {
		t := r.Spec.Taint
		added := ""
		if t.TimeAdded != nil {
			added = age(*t.TimeAdded)
		}
		return row(r.Name, t.Key, t.Value, string(t.Effect), added, age(r.CreationTimestamp))
	}))
}

// csrCondition is the CONDITION cell: Denied, Approved or Pending, then
// ",Failed" and ",Issued" as they apply.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	status := "Pending"
	if denied {
		status = "Denied"
	} else if approved {
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}

// coreEvent maps an events.k8s.io Event onto the core Event it is stored as.
func coreEvent(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		Related:             e.Related,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

func init() {
	register(gvk("apiregistration.k8s.io", "v1", "APIService"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Service", "The reference to the service that hosts this API endpoint."),
		str("Available", "Whether this service is available."),
		ageColumn(),
	}, typed(func(a *apiregistrationv1.APIService) []interface{} {
		service := "Local"
		if s := a.Spec.Service; s != nil {
			service = s.Namespace + "/" + s.Name
		}
		available := string(apiregistrationv1.ConditionUnknown)
		for _, c := range a.Status.Conditions {
			if c.Type != apiregistrationv1.Available {
				continue
			}
			available = string(c.Status)
			if c.Status != apiregistrationv1.ConditionTrue && c.Reason != "" {
				available = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
			}
		}
		return row(a.Name, service, available, age(a.CreationTimestamp))
	}))
}
